"""Graph-building functions (MAX ``max.graph.ops`` names).

These accept broadcastable/promotable operands and Python scalars (the high level); the
lowering pass (``interpreter.graph.lowering.lower``) turns the result into primitive ops.
Each family module lists its functions in ``__all__``; this package re-exports them all and
installs the Python operators of graph values (``ops.methods``).
"""

from . import (
    buffer,
    convolution,
    creation,
    debug,
    devices,
    elementwise,
    indexing,
    linalg,
    pooling,
    normalization,
    random,
    reduction,
    shape,
    vision,
)
from . import resize as resize_builders  # its function `resize` takes the module's name
from .buffer import *  # noqa: F403
from .convolution import *  # noqa: F403
from .creation import *  # noqa: F403
from .debug import *  # noqa: F403
from .devices import *  # noqa: F403
from .elementwise import *  # noqa: F403
from .indexing import *  # noqa: F403
from .linalg import *  # noqa: F403
from .methods import install_value_methods
from .pooling import *  # noqa: F403
from .normalization import *  # noqa: F403
from .random import *  # noqa: F403
from .reduction import *  # noqa: F403
from .resize import *  # noqa: F403
from .shape import *  # noqa: F403
from .vision import *  # noqa: F403

__all__ = sorted({*buffer.__all__, *convolution.__all__, *creation.__all__, *debug.__all__,
                  *devices.__all__, *elementwise.__all__, *indexing.__all__, *linalg.__all__,
                  *normalization.__all__, *pooling.__all__, *random.__all__, *reduction.__all__,
                  *shape.__all__, *vision.__all__}
                 | set(resize_builders.__all__))

install_value_methods()
