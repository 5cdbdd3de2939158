"""Static structure of a multibody tree: hashable, computed once, never traced."""

from __future__ import annotations

import dataclasses
import itertools

from .joints import NQ, NV, QUAT_OFFSET, JointType


def _offsets(sizes) -> tuple[int, ...]:
    """Start index of each block in a concatenation of blocks of the given sizes."""
    sizes = tuple(sizes)
    return tuple(itertools.accumulate((0,) + sizes[:-1])) if sizes else ()


@dataclasses.dataclass(frozen=True)
class Topology:
    """Body tree with ``parent[i] < i`` (``-1`` is the world), one joint per body.

    All fields are tuples of ints / strings / enums, so a Topology hashes and compares by
    value: two builds of the same model give equal topologies and share jit caches.
    """

    body_names: tuple[str, ...]
    parent: tuple[int, ...]
    joint_types: tuple[JointType, ...]
    joint_names: tuple[str, ...]
    site_names: tuple[str, ...] = ()
    site_body: tuple[int, ...] = ()
    n_modes: tuple[int, ...] = ()  # elastic (modal) coordinates per body; () = all rigid

    # ---- flexible bodies: modal coordinates follow all joint coordinates in q and v ----
    @property
    def modes(self) -> tuple[int, ...]:
        return self.n_modes if self.n_modes else (0,) * self.nb

    @property
    def has_flex(self) -> bool:
        return any(self.modes)

    @property
    def nq_rigid(self) -> int:
        return sum(self.nq_joint)

    @property
    def nv_rigid(self) -> int:
        return sum(self.nv_joint)

    @property
    def ne(self) -> int:
        """Number of elastic coordinates."""
        return sum(self.modes)

    def e_q_slice(self, i: int) -> slice:
        """Body ``i``'s modal coordinates inside ``q``."""
        s = self.nq_rigid + _offsets(self.modes)[i]
        return slice(s, s + self.modes[i])

    def e_v_slice(self, i: int) -> slice:
        """Body ``i``'s modal rates inside ``v``."""
        s = self.nv_rigid + _offsets(self.modes)[i]
        return slice(s, s + self.modes[i])

    # ---- derived tables (Pinocchio's idx_q / idx_v / subtrees) ----
    @property
    def nb(self) -> int:
        return len(self.body_names)

    @property
    def nq_joint(self) -> tuple[int, ...]:
        return tuple(NQ[j] for j in self.joint_types)

    @property
    def nv_joint(self) -> tuple[int, ...]:
        return tuple(NV[j] for j in self.joint_types)

    @property
    def q_start(self) -> tuple[int, ...]:
        return _offsets(self.nq_joint)

    @property
    def v_start(self) -> tuple[int, ...]:
        return _offsets(self.nv_joint)

    @property
    def nq(self) -> int:
        return self.nq_rigid + self.ne

    @property
    def nv(self) -> int:
        return self.nv_rigid + self.ne

    def q_slice(self, i: int) -> slice:
        return slice(self.q_start[i], self.q_start[i] + self.nq_joint[i])

    def v_slice(self, i: int) -> slice:
        return slice(self.v_start[i], self.v_start[i] + self.nv_joint[i])

    @property
    def quat_q_indices(self) -> tuple[tuple[int, int], ...]:
        """(start, stop) of every quaternion inside ``q``."""
        out = []
        for i, jt in enumerate(self.joint_types):
            if jt in QUAT_OFFSET:
                s = self.q_start[i] + QUAT_OFFSET[jt]
                out.append((s, s + 4))
        return tuple(out)

    def body_index(self, name: str) -> int:
        try:
            return self.body_names.index(name)
        except ValueError:
            raise KeyError(f"no body named {name!r}; bodies are {list(self.body_names)}") from None

    def site_index(self, name: str) -> int:
        try:
            return self.site_names.index(name)
        except ValueError:
            raise KeyError(f"no site named {name!r}; sites are {list(self.site_names)}") from None

    def joint_index(self, name: str) -> int:
        try:
            return self.joint_names.index(name)
        except ValueError:
            raise KeyError(f"no joint named {name!r}; joints are {list(self.joint_names)}") from None
