"""The actor model: processes with local state and message handlers, a network, crashes and
Byzantine processes (`spec`), over the network semantics in `networks`."""

from .spec import *  # noqa: F403
from .spec import __all__  # noqa: F401
