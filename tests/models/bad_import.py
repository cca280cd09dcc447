"""A spec module that fails when imported."""

from specs.lang import Spec

undefined_name_here  # noqa: B018, F821


class Never(Spec):
    pass
