"""A spec module that fails when imported."""

from lockstep.specs.lang import Spec

undefined_name_here  # noqa: B018, F821


class Never(Spec):
    pass
