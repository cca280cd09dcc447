"""The synchronous rounds model: nodes of a broadcast/receive network acting in lockstep (`spec`),
and trees as spec parameters (`trees`)."""

from .spec import *  # noqa: F403
from .spec import __all__  # noqa: F401
