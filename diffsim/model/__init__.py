"""Model description: joints, topology, parameters, flexible-link data, builder."""

from .beam import Beam, BeamError, beam, gauss_legendre
from .builder import ModelBuilder, ModelError
from .flexbody import FlexBody
from .joints import JointType
from .model import Model, body_names, joint_passive_forces, neutral_configuration
from .params import ParamError, get_param, param_names, set_params
from .topology import Topology

__all__ = [
    "Beam",
    "BeamError",
    "FlexBody",
    "JointType",
    "Model",
    "ModelBuilder",
    "ModelError",
    "ParamError",
    "Topology",
    "beam",
    "body_names",
    "gauss_legendre",
    "get_param",
    "joint_passive_forces",
    "neutral_configuration",
    "param_names",
    "set_params",
]
