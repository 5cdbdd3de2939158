"""Model description: joints, topology, parameters, builder."""

from .builder import ModelBuilder, ModelError
from .joints import JointType
from .model import Model, body_names, neutral_configuration
from .params import get_param, param_names, set_params
from .topology import Topology

__all__ = [
    "JointType",
    "Model",
    "ModelBuilder",
    "ModelError",
    "Topology",
    "body_names",
    "get_param",
    "neutral_configuration",
    "param_names",
    "set_params",
]
