"""diffsim: differentiable multibody dynamics for robots, in pure JAX.

Public API (re-exports only). Conventions: ``diffsim.spatial``'s docstring.
"""

from . import spatial
from .dynamics import (
    angular_momentum,
    bias_forces,
    body_com,
    body_velocities,
    centre_of_mass,
    configuration_rate,
    difference,
    forward_dynamics,
    forward_kinematics,
    gravity_forces,
    integrate,
    inverse_dynamics,
    kinetic_energy,
    linear_momentum,
    mass_matrix,
    normalize,
    point_jacobian,
    point_velocity,
    potential_energy,
    random_configuration,
    site_poses,
    spatial_momentum,
    total_energy,
)
from .model import (
    JointType,
    Model,
    ModelBuilder,
    ModelError,
    Topology,
    body_names,
    get_param,
    neutral_configuration,
    param_names,
    set_params,
)

__version__ = "0.1.0"
from .simulation import HHT, RK4, GeneralizedAlpha, Newmark, Prescribed, Status, Trajectory, joint_friction, joint_torques, prescribe, rollout, simulate
from . import flexible
from . import contact
from .contact import ContactPoint, Plane, friction_law, normal_law
from .contact import contact as contacts
from .flexible import FlexBody, beam
from .loads import Loads, PointForce, TimeSeries, point_force, site_force
from .io import from_mjmodel, from_mujoco, load_mjcf, load_urdf, to_mujoco
from . import complementarity
from .complementarity import LCPError, LCPStatus, LCPTrajectory, RigidContact, lemke, rigid_contacts, simulate_lcp
