"""MuJoCo's MJCF schema as data: the attributes every element may carry, by its place in the tree.

MuJoCo refuses an element or attribute its schema does not list ("Schema violation: unrecognized
attribute"); :func:`diffsim.io.load_mjcf` does the same with this table (:func:`check`), so that a
misspelt attribute (``<joint dampng="3"/>``) is an error and not silently ignored. Elements and
attributes that diffsim does not model are listed here too: they stay accepted (and ignored).

Source: MuJoCo's own schema table (``MJCF[...]`` in ``src/xml/xml_native_reader.cc``, generated in
recent releases into ``src/xml/generated/mjcf_table.inc`` from ``src/xml/mjcf.schema``;
https://github.com/google-deepmind/mujoco), written out here as the schema MuJoCo 4.0.0 prints
(``mujoco.mj_printSchema``). Paths name each element from the root; ``(world)body`` is
``mujoco/body`` (``worldbody``, ``frame`` and ``replicate`` are validated against that row, as in
MuJoCo's ``mjXSchema::NameMatch``); ``R`` marks the recursive elements (a ``body`` in a ``body``,
a ``default`` in a ``default``); ``<include>`` is expanded before the check."""

from __future__ import annotations

import difflib
import re

from ..model.builder import ModelError

MUJOCO_VERSION = "4.0.0"  # the release whose schema this is

#: element path -> (cardinality: ! one, ? at most one, * any, R any and recursive; its attributes)
ELEMENTS: dict[str, tuple[str, str]] = {
    "mujoco": ("!", "model"),
    "mujoco/compiler": ("*",
        "alignfree angle assetdir autolimits balanceinertia boundinertia boundmass conflict coordinate discardvisual "
        "eulerseq fitaabb fusestatic inertiafromgeom inertiagrouprange meshdir passthrough savecanonical savecompiled "
        "saveinertial settotalmass strippath texturedir usethread"),
    "mujoco/compiler/lengthrange": ("?",
        "accel interval inttotal maxforce mode timeconst timestep tolrange useexisting uselimit"),
    "mujoco/option": ("*",
        "actuatorgroupdisable ccd_iterations ccd_tolerance cone density gravity impratio integrator iterations "
        "jacobian ls_iterations ls_tolerance magnetic noslip_iterations noslip_tolerance o_friction o_margin o_solimp "
        "o_solref sdf_initpoints sdf_iterations sleep_tolerance solver timestep tolerance viscosity wind"),
    "mujoco/option/flag": ("?",
        "actuation autoreset clampctrl constraint contact damper diagexact energy equality eulerdamp filterparent "
        "frictionloss fwdinv gravity invdiscrete ipc island limit midphase multiccd nativeccd override refsafe sensor "
        "sleep speculative spring warmstart"),
    "mujoco/size": ("*",
        "memory nconmax njmax nkey nstack nuser_actuator nuser_body nuser_cam nuser_geom nuser_jnt nuser_sensor "
        "nuser_site nuser_tendon nuserdata"),
    "mujoco/statistic": ("*", "center extent meaninertia meanmass meansize"),
    "mujoco/visual": ("*", ""),
    "mujoco/visual/global": ("?",
        "azimuth bvactive cameraid elevation ellipsoidinertia fovy glow ipd linewidth offheight offwidth orthographic "
        "realtime"),
    "mujoco/visual/quality": ("?", "numquads numslices numstacks offsamples shadowsize"),
    "mujoco/visual/headlight": ("?", "active ambient diffuse specular"),
    "mujoco/visual/map": ("?",
        "actuatortendon alpha fogend fogstart force haze shadowclip shadowscale stiffness stiffnessrot torque zfar "
        "znear"),
    "mujoco/visual/scale": ("?",
        "actuatorlength actuatorwidth camera com connect constraint contactheight contactwidth forcewidth framelength "
        "framewidth frustum jointlength jointwidth light selectpoint slidercrank"),
    "mujoco/visual/rgba": ("?",
        "actuator actuatornegative actuatorpositive bv bvactive camera com connect constraint contactforce "
        "contactfriction contactgap contactpoint contacttorque crankbroken fog force frustum haze inertia joint light "
        "rangefinder selectpoint slidercrank"),
    "mujoco/default": ("R", "class"),
    "mujoco/default/mesh": ("?", "inertia maxhullvert scale"),
    "mujoco/default/texture": ("?",
        "builtin colorspace embed gridlayout gridsize height hflip mark markrgb nchannel random rgb1 rgb2 type vflip "
        "width"),
    "mujoco/default/material": ("?",
        "emission metallic reflectance rgba roughness shininess specular texrepeat texture texuniform"),
    "mujoco/default/material/layer": ("*", "role texture"),
    "mujoco/default/joint": ("?",
        "actuatorfrclimited actuatorfrcrange actuatorgravcomp armature axis damping frictionloss group limited margin "
        "pos range ref solimpfriction solimplimit solreffriction solreflimit springdamper springref springyield "
        "stiffness type user"),
    "mujoco/default/geom": ("?",
        "adhesion axisangle castshadow conaffinity condim contype density euler fitscale fluidcoef fluidshape friction "
        "fromto gap group hfield margin mass material mesh pos priority quat rgba shellinertia size solimp solmix "
        "solref surfacevel type user xyaxes zaxis"),
    "mujoco/default/site": ("?",
        "axisangle euler fromto group material mesh pos quat rgba size type user xyaxes zaxis"),
    "mujoco/default/camera": ("?",
        "axisangle euler focal focalpixel fovy ipd mode output pos principal principalpixel projection quat resolution "
        "sensorsize user xyaxes zaxis"),
    "mujoco/default/light": ("?",
        "active ambient attenuation bulbradius castshadow cutoff diffuse dir directional exponent intensity mode pos "
        "range softness specular type"),
    "mujoco/default/pair": ("?", "adhesion condim friction gap margin solimp solref solreffriction"),
    "mujoco/default/equality": ("?", "active solimp solref"),
    "mujoco/default/tendon": ("?",
        "actuatorfrclimited actuatorfrcrange armature damping frictionloss group limited margin material range rgba "
        "solimpfriction solimplimit solreffriction solreflimit springlength springyield stiffness user width"),
    "mujoco/default/general": ("?",
        "actdim actearly actlimited actrange armature biasprm biastype cranklength ctrllimited ctrlrange damping delay "
        "dynprm dyntype ffrange forcelimited forcerange gainprm gaintype gear group inheritrange input interp nsample "
        "user velrange"),
    "mujoco/default/motor": ("?",
        "armature cranklength ctrllimited ctrlrange damping delay forcelimited forcerange gear group interp nsample "
        "user"),
    "mujoco/default/position": ("?",
        "armature cranklength ctrllimited ctrlrange damping dampratio delay forcelimited forcerange gear group "
        "inheritrange interp kp kv nsample timeconst user"),
    "mujoco/default/velocity": ("?",
        "armature cranklength ctrllimited ctrlrange damping delay forcelimited forcerange gear group interp kv nsample "
        "user"),
    "mujoco/default/intvelocity": ("?",
        "actlimited actrange armature cranklength ctrllimited ctrlrange damping dampratio delay forcelimited "
        "forcerange gear group inheritrange interp kp kv nsample user"),
    "mujoco/default/orientation": ("?",
        "ctrlrange dampratio delay forcelimited forcerange group input interp kp kv nsample user"),
    "mujoco/default/pid": ("?",
        "armature cranklength ctrllimited ctrlrange damping dampratio delay ffrange forcelimited forcerange gear group "
        "imax inheritrange input interp ki kp kv nsample posrange slewmax user velrange"),
    "mujoco/default/damper": ("?",
        "armature cranklength ctrlrange damping delay forcelimited forcerange gear group interp kv nsample user"),
    "mujoco/default/cylinder": ("?",
        "area armature bias cranklength ctrllimited ctrlrange damping delay diameter forcelimited forcerange gear "
        "group interp nsample timeconst user"),
    "mujoco/default/muscle": ("?",
        "armature cranklength ctrllimited ctrlrange damping delay force forcelimited forcerange fpmax fvmax gear group "
        "interp lmax lmin nsample range scale timeconst user vmax"),
    "mujoco/default/adhesion": ("?", "ctrlrange delay forcelimited forcerange gain group interp nsample user"),
    "mujoco/default/dcmotor": ("?",
        "armature cogging controller cranklength ctrllimited ctrlrange damping delay gear group inductance input "
        "interp lugre motorconst nominal nsample resistance saturation thermal user"),
    "mujoco/extension": ("*", ""),
    "mujoco/extension/plugin": ("*", "plugin"),
    "mujoco/extension/plugin/instance": ("*", "name"),
    "mujoco/extension/plugin/instance/config": ("*", "key value"),
    "mujoco/asset": ("*", ""),
    "mujoco/asset/mesh": ("*",
        "builtin class content_type face file inertia material maxhullvert name normal params refpos refquat scale "
        "smoothnormal texcoord vertex"),
    "mujoco/asset/mesh/plugin": ("*", "instance plugin"),
    "mujoco/asset/mesh/plugin/config": ("*", "key value"),
    "mujoco/asset/hfield": ("*", "content_type elevation file name ncol nrow size"),
    "mujoco/asset/skin": ("*", "face file group inflate material name rgba texcoord vertex"),
    "mujoco/asset/skin/bone": ("*", "bindpos bindquat body vertid vertweight"),
    "mujoco/asset/texture": ("*",
        "builtin class colorspace content_type embed file fileback filedown filefront fileleft fileright fileup "
        "gridlayout gridsize height hflip mark markrgb name nchannel random rgb1 rgb2 type vflip width"),
    "mujoco/asset/material": ("*",
        "class emission metallic name reflectance rgba roughness shininess specular texrepeat texture texuniform"),
    "mujoco/asset/material/layer": ("*", "role texture"),
    "mujoco/asset/model": ("*", "content_type file name"),
    "mujoco/body": ("R", "axisangle childclass euler fuse gravcomp mocap name pos quat simple sleep user xyaxes zaxis"),
    "mujoco/body/inertial": ("?", "axisangle diaginertia euler fullinertia mass pos quat xyaxes zaxis"),
    "mujoco/body/joint": ("*",
        "actuatorfrclimited actuatorfrcrange actuatorgravcomp armature axis class damping frictionloss group limited "
        "margin name pos range ref solimpfriction solimplimit solreffriction solreflimit springdamper springref "
        "springyield stiffness type user"),
    "mujoco/body/freejoint": ("*", "align group name"),
    "mujoco/body/geom": ("*",
        "adhesion axisangle castshadow class conaffinity condim contype density euler fitscale fluidcoef fluidshape "
        "friction fromto gap group hfield margin mass material mesh name pos priority quat rgba shellinertia size "
        "solimp solmix solref surfacevel type user xyaxes zaxis"),
    "mujoco/body/geom/plugin": ("*", "instance plugin"),
    "mujoco/body/geom/plugin/config": ("*", "key value"),
    "mujoco/body/attach": ("*", "body frame model prefix"),
    "mujoco/body/site": ("*",
        "axisangle class euler fromto group material mesh name pos quat rgba size type user xyaxes zaxis"),
    "mujoco/body/camera": ("*",
        "axisangle class euler focal focalpixel fovy ipd mode name output pos principal principalpixel projection quat "
        "resolution sensorsize target user xyaxes zaxis"),
    "mujoco/body/light": ("*",
        "active ambient attenuation bulbradius castshadow class cutoff diffuse dir directional exponent intensity mode "
        "name pos range softness specular target texture type"),
    "mujoco/body/plugin": ("*", "instance plugin"),
    "mujoco/body/plugin/config": ("*", "key value"),
    "mujoco/body/flexcomp": ("*",
        "axisangle cellcount count dim dof element euler file flatskin group inertiabox mass material mesh name origin "
        "point pos quat radius rgba rigid scale spacing texcoord type xyaxes zaxis"),
    "mujoco/body/flexcomp/edge": ("?", "damping equality solimp solref stiffness"),
    "mujoco/body/flexcomp/elasticity": ("?",
        "damping elastic2d poisson section sectionsize shear thickness yield young"),
    "mujoco/body/flexcomp/contact": ("?",
        "activelayers conaffinity condim contype friction gap margin passive priority selfcollide solimp solmix solref"),
    "mujoco/body/flexcomp/pin": ("*", "grid gridrange id range"),
    "mujoco/body/flexcomp/plugin": ("*", "instance plugin"),
    "mujoco/body/flexcomp/plugin/config": ("*", "key value"),
    "mujoco/deformable": ("*", ""),
    "mujoco/deformable/flex": ("*",
        "body cellcount dim dof element elemtexcoord flatskin group material name node nodecoord radius rgba texcoord "
        "vertex"),
    "mujoco/deformable/flex/contact": ("?",
        "activelayers conaffinity condim contype friction gap margin passive priority selfcollide solimp solmix solref"),
    "mujoco/deformable/flex/edge": ("?", "damping stiffness"),
    "mujoco/deformable/flex/elasticity": ("?",
        "damping elastic2d poisson section sectionsize shear thickness yield young"),
    "mujoco/deformable/skin": ("*", "face file group inflate material name rgba texcoord vertex"),
    "mujoco/deformable/skin/bone": ("*", "bindpos bindquat body vertid vertweight"),
    "mujoco/contact": ("*", ""),
    "mujoco/contact/pair": ("*",
        "adhesion class condim friction gap geom1 geom2 margin name solimp solref solreffriction"),
    "mujoco/contact/exclude": ("*", "body1 body2 name"),
    "mujoco/tendon": ("*", ""),
    "mujoco/tendon/spatial": ("*",
        "actuatorfrclimited actuatorfrcrange armature class damping frictionloss group limited margin material name "
        "range rgba solimpfriction solimplimit solreffriction solreflimit springlength springyield stiffness user "
        "width"),
    "mujoco/tendon/spatial/site": ("*", "site"),
    "mujoco/tendon/spatial/geom": ("*", "geom sidesite"),
    "mujoco/tendon/spatial/pulley": ("*", "divisor"),
    "mujoco/tendon/fixed": ("*",
        "actuatorfrclimited actuatorfrcrange armature class damping frictionloss group limited margin name range "
        "solimpfriction solimplimit solreffriction solreflimit springlength springyield stiffness user"),
    "mujoco/tendon/fixed/joint": ("*", "coef joint"),
    "mujoco/equality": ("*", ""),
    "mujoco/equality/connect": ("*", "active anchor body1 body2 class name site1 site2 solimp solref"),
    "mujoco/equality/weld": ("*", "active anchor body1 body2 class name relpose site1 site2 solimp solref torquescale"),
    "mujoco/equality/joint": ("*", "active class joint1 joint2 name polycoef solimp solref"),
    "mujoco/equality/tendon": ("*", "active class name polycoef solimp solref tendon1 tendon2"),
    "mujoco/equality/flex": ("*", "active class flex name solimp solref"),
    "mujoco/equality/flexstrain": ("*", "active cell class flex name solimp solref"),
    "mujoco/actuator": ("*", ""),
    "mujoco/actuator/general": ("*",
        "actdim actearly actlimited actrange armature biasprm biastype body class cranklength cranksite ctrllimited "
        "ctrlrange damping delay dynprm dyntype ffrange forcelimited forcerange gainprm gaintype gear group "
        "inheritrange input interp joint jointinparent lengthrange name nsample refsite site slidersite tendon user "
        "velrange"),
    "mujoco/actuator/motor": ("*",
        "armature class cranklength cranksite ctrllimited ctrlrange damping delay forcelimited forcerange gear group "
        "interp joint jointinparent lengthrange name nsample refsite site slidersite tendon user"),
    "mujoco/actuator/position": ("*",
        "armature class cranklength cranksite ctrllimited ctrlrange damping dampratio delay forcelimited forcerange "
        "gear group inheritrange interp joint jointinparent kp kv lengthrange name nsample refsite site slidersite "
        "tendon timeconst user"),
    "mujoco/actuator/velocity": ("*",
        "armature class cranklength cranksite ctrllimited ctrlrange damping delay forcelimited forcerange gear group "
        "interp joint jointinparent kv lengthrange name nsample refsite site slidersite tendon user"),
    "mujoco/actuator/intvelocity": ("*",
        "actlimited actrange armature class cranklength cranksite ctrllimited ctrlrange damping dampratio delay "
        "forcelimited forcerange gear group inheritrange interp joint jointinparent kp kv lengthrange name nsample "
        "refsite site slidersite tendon user"),
    "mujoco/actuator/orientation": ("*",
        "class ctrlrange dampratio delay forcelimited forcerange group input interp joint kp kv name nsample refsite "
        "site user"),
    "mujoco/actuator/pid": ("*",
        "armature class cranklength cranksite ctrllimited ctrlrange damping dampratio delay ffrange forcelimited "
        "forcerange gear group imax inheritrange input interp joint jointinparent ki kp kv lengthrange name nsample "
        "posrange refsite site slewmax slidersite tendon user velrange"),
    "mujoco/actuator/damper": ("*",
        "armature class cranklength cranksite ctrlrange damping delay forcelimited forcerange gear group interp joint "
        "jointinparent kv lengthrange name nsample refsite site slidersite tendon user"),
    "mujoco/actuator/cylinder": ("*",
        "area armature bias class cranklength cranksite ctrllimited ctrlrange damping delay diameter forcelimited "
        "forcerange gear group interp joint jointinparent lengthrange name nsample refsite site slidersite tendon "
        "timeconst user"),
    "mujoco/actuator/muscle": ("*",
        "armature class cranklength cranksite ctrllimited ctrlrange damping delay force forcelimited forcerange fpmax "
        "fvmax gear group interp joint jointinparent lengthrange lmax lmin name nsample range scale slidersite "
        "tausmooth tendon timeconst user vmax"),
    "mujoco/actuator/adhesion": ("*",
        "body class ctrlrange delay forcelimited forcerange gain group interp name nsample user"),
    "mujoco/actuator/dcmotor": ("*",
        "armature class cogging controller cranklength cranksite ctrllimited ctrlrange damping delay gear group "
        "inductance input interp joint jointinparent lengthrange lugre motorconst name nominal nsample refsite "
        "resistance saturation site slidersite tendon thermal user"),
    "mujoco/actuator/plugin": ("*",
        "actdim actearly actlimited actrange armature class cranklength cranksite ctrllimited ctrlrange damping delay "
        "dynprm dyntype forcelimited forcerange gear group instance interp joint jointinparent lengthrange name "
        "nsample plugin site slidersite tendon user"),
    "mujoco/actuator/plugin/config": ("*", "key value"),
    "mujoco/sensor": ("*", ""),
    "mujoco/sensor/touch": ("*", "cutoff delay interp interval name noise nsample site user"),
    "mujoco/sensor/accelerometer": ("*", "cutoff delay interp interval name noise nsample site user"),
    "mujoco/sensor/velocimeter": ("*", "cutoff delay interp interval name noise nsample site user"),
    "mujoco/sensor/gyro": ("*", "cutoff delay interp interval name noise nsample site user"),
    "mujoco/sensor/force": ("*", "cutoff delay interp interval name noise nsample site user"),
    "mujoco/sensor/torque": ("*", "cutoff delay interp interval name noise nsample site user"),
    "mujoco/sensor/magnetometer": ("*", "cutoff delay interp interval name noise nsample site user"),
    "mujoco/sensor/camprojection": ("*", "camera cutoff delay interp interval name noise nsample site user"),
    "mujoco/sensor/rangefinder": ("*", "camera cutoff data delay interp interval name noise nsample site user"),
    "mujoco/sensor/jointpos": ("*", "cutoff delay interp interval joint name noise nsample user"),
    "mujoco/sensor/jointvel": ("*", "cutoff delay interp interval joint name noise nsample user"),
    "mujoco/sensor/tendonpos": ("*", "cutoff delay interp interval name noise nsample tendon user"),
    "mujoco/sensor/tendonvel": ("*", "cutoff delay interp interval name noise nsample tendon user"),
    "mujoco/sensor/actuatorpos": ("*", "actuator cutoff delay interp interval name noise nsample user"),
    "mujoco/sensor/actuatorvel": ("*", "actuator cutoff delay interp interval name noise nsample user"),
    "mujoco/sensor/actuatorfrc": ("*", "actuator cutoff delay interp interval name noise nsample user"),
    "mujoco/sensor/jointactuatorfrc": ("*", "cutoff delay interp interval joint name noise nsample user"),
    "mujoco/sensor/tendonactuatorfrc": ("*", "cutoff delay interp interval name noise nsample tendon user"),
    "mujoco/sensor/ballquat": ("*", "cutoff delay interp interval joint name noise nsample user"),
    "mujoco/sensor/ballangvel": ("*", "cutoff delay interp interval joint name noise nsample user"),
    "mujoco/sensor/jointlimitpos": ("*", "cutoff delay interp interval joint name noise nsample user"),
    "mujoco/sensor/jointlimitvel": ("*", "cutoff delay interp interval joint name noise nsample user"),
    "mujoco/sensor/jointlimitfrc": ("*", "cutoff delay interp interval joint name noise nsample user"),
    "mujoco/sensor/tendonlimitpos": ("*", "cutoff delay interp interval name noise nsample tendon user"),
    "mujoco/sensor/tendonlimitvel": ("*", "cutoff delay interp interval name noise nsample tendon user"),
    "mujoco/sensor/tendonlimitfrc": ("*", "cutoff delay interp interval name noise nsample tendon user"),
    "mujoco/sensor/framepos": ("*",
        "cutoff delay interp interval name noise nsample objname objtype refname reftype user"),
    "mujoco/sensor/framequat": ("*",
        "cutoff delay interp interval name noise nsample objname objtype refname reftype user"),
    "mujoco/sensor/framexaxis": ("*",
        "cutoff delay interp interval name noise nsample objname objtype refname reftype user"),
    "mujoco/sensor/frameyaxis": ("*",
        "cutoff delay interp interval name noise nsample objname objtype refname reftype user"),
    "mujoco/sensor/framezaxis": ("*",
        "cutoff delay interp interval name noise nsample objname objtype refname reftype user"),
    "mujoco/sensor/framelinvel": ("*",
        "cutoff delay interp interval name noise nsample objname objtype refname reftype user"),
    "mujoco/sensor/frameangvel": ("*",
        "cutoff delay interp interval name noise nsample objname objtype refname reftype user"),
    "mujoco/sensor/framelinacc": ("*", "cutoff delay interp interval name noise nsample objname objtype user"),
    "mujoco/sensor/frameangacc": ("*", "cutoff delay interp interval name noise nsample objname objtype user"),
    "mujoco/sensor/subtreecom": ("*", "body cutoff delay interp interval name noise nsample user"),
    "mujoco/sensor/subtreelinvel": ("*", "body cutoff delay interp interval name noise nsample user"),
    "mujoco/sensor/subtreeangmom": ("*", "body cutoff delay interp interval name noise nsample user"),
    "mujoco/sensor/insidesite": ("*",
        "cutoff delay enclosed interp interval name noise nsample objname objtype site user"),
    "mujoco/sensor/distance": ("*", "body1 body2 cutoff delay geom1 geom2 interp interval name noise nsample user"),
    "mujoco/sensor/normal": ("*", "body1 body2 cutoff delay geom1 geom2 interp interval name noise nsample user"),
    "mujoco/sensor/fromto": ("*", "body1 body2 cutoff delay geom1 geom2 interp interval name noise nsample user"),
    "mujoco/sensor/contact": ("*",
        "body1 body2 cutoff data delay geom1 geom2 interp interval name noise nsample num reduce site subtree1 "
        "subtree2 user"),
    "mujoco/sensor/e_potential": ("*", "cutoff delay interp interval name noise nsample user"),
    "mujoco/sensor/e_kinetic": ("*", "cutoff delay interp interval name noise nsample user"),
    "mujoco/sensor/clock": ("*", "cutoff delay interp interval name noise nsample user"),
    "mujoco/sensor/tactile": ("*", "cutoff delay geom interp interval mesh name nsample user"),
    "mujoco/sensor/user": ("*", "cutoff datatype dim name needstage noise objname objtype user"),
    "mujoco/sensor/plugin": ("*", "cutoff instance name objname objtype plugin refname reftype user"),
    "mujoco/sensor/plugin/config": ("*", "key value"),
    "mujoco/custom": ("*", ""),
    "mujoco/custom/numeric": ("*", "data name size"),
    "mujoco/custom/text": ("*", "data name"),
    "mujoco/custom/tuple": ("*", "name"),
    "mujoco/custom/tuple/element": ("*", "objname objtype prm"),
    "mujoco/keyframe": ("*", ""),
    "mujoco/keyframe/key": ("*", "act ctrl mpos mquat name plastic qpos qvel time"),
}

_BODY = "mujoco/body"
_BODY_ALIASES = ("body", "frame", "replicate")  # validated against the body row (MuJoCo's NameMatch)


def _children(path: str) -> dict[str, str]:
    """``{tag: path}`` of the elements allowed inside the element at ``path``."""
    out = {p[len(path) + 1:]: p for p in ELEMENTS if p.startswith(path + "/") and "/" not in p[len(path) + 1:]}
    if path == "mujoco":
        out.pop("body", None)
        out["worldbody"] = _BODY
    elif path == _BODY:
        out.update({tag: _BODY for tag in _BODY_ALIASES})
    elif ELEMENTS[path][0] == "R":
        out[path.rsplit("/", 1)[-1]] = path
    return out


_CHILDREN = {p: _children(p) for p in ELEMENTS}
_ATTRS = {p: frozenset(a.split()) for p, (_, a) in ELEMENTS.items()}


def suggest(word: str, choices) -> str:
    """``; did you mean 'x'?`` for the choices closest to ``word`` (``difflib``), or ''."""
    close = difflib.get_close_matches(word, sorted(choices), n=3, cutoff=0.6)
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def _is_int(text: str) -> bool:
    return re.fullmatch(r"\s*[+-]?[0-9]+\s*", text) is not None


def check(doc, root) -> None:
    """Refuse, as MuJoCo does, every element and attribute that MuJoCo's schema (:data:`ELEMENTS`)
    does not allow where it stands, naming the element, its line and file, the attribute and the
    closest allowed names (``difflib``); also what MuJoCo refuses while reading the schema's
    values: attributes on ``<worldbody>`` ("World body cannot have attributes"), a second
    ``?`` element (``<inertial>``, ``<flag>`` …) and a ``group`` that is not one integer.
    ``doc`` is the :class:`~diffsim.io.xml.XmlDoc` of ``root`` (includes expanded)."""

    def where(el):
        return f"{doc.where(el)} in {doc.file_of(el)}"

    def walk(el, path):
        if el.tag == "worldbody" and el.attrib:
            raise ModelError(f"MJCF {where(el)}: <worldbody> takes no attributes (MuJoCo: the world body cannot have "
                             f"attributes), got {sorted(el.attrib)}; put childclass on its bodies or frames")
        allowed = _ATTRS[path]
        for attr, value in el.attrib.items():
            if attr not in allowed:
                raise ModelError(f"MJCF {where(el)}: unrecognized attribute {attr!r} of <{el.tag}> (not in MuJoCo's "
                                 f"schema){suggest(attr, allowed)}")
            if attr == "group" and not _is_int(value):
                raise ModelError(f"MJCF {where(el)}: group={value!r} must be one integer")
        kids = _CHILDREN[path]
        seen: dict[str, int] = {}
        for child in el:
            sub = kids.get(child.tag)
            if sub is None:
                raise ModelError(f"MJCF {where(child)}: unrecognized element <{child.tag}> inside <{el.tag}> (not in "
                                 f"MuJoCo's schema){suggest(child.tag, kids)}")
            seen[child.tag] = seen.get(child.tag, 0) + 1
            if ELEMENTS[sub][0] in "?!" and sub != path and seen[child.tag] > 1:
                raise ModelError(f"MJCF {where(child)}: <{el.tag}> may have at most one <{child.tag}>")
            walk(child, sub)

    walk(root, "mujoco")
