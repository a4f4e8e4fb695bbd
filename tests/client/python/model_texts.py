"""Small model texts shared by the Python tests: one pendulum written in SDFormat and in MJCF
(the same body, so both give the same numbers), and a URDF whose finger link has no mass."""

PENDULUM_SDF = (
    "<sdf version='1.9'><model name='pendulum'><link name='rod'><inertial><pose>0 0 -0.5 0 0 0"
    "</pose><mass>1</mass><inertia><ixx>0.01</ixx><iyy>0.01</iyy><izz>0.01</izz><ixy>0</ixy>"
    "<ixz>0</ixz><iyz>0</iyz></inertia></inertial></link><joint name='hinge' type='revolute'>"
    "<parent>world</parent><child>rod</child><axis><xyz>0 1 0</xyz></axis></joint></model></sdf>")
PENDULUM_MJCF = (
    "<mujoco model='pendulum'><worldbody><body name='rod'><joint name='hinge' type='hinge' "
    "axis='0 1 0'/><inertial pos='0 0 -0.5' mass='1' diaginertia='0.01 0.01 0.01'/></body>"
    "</worldbody></mujoco>")

FINGER_URDF = (
    "<robot name='finger'><link name='a'/><joint name='j' type='continuous'><parent link='a'/>"
    "<child link='b'/><axis xyz='0 0 1'/></joint><link name='b'><inertial><mass value='1'/>"
    "<inertia ixx='1' iyy='1' izz='1' ixy='0' ixz='0' iyz='0'/></inertial></link>"
    "<joint name='f' type='continuous'><parent link='b'/><child link='c'/></joint>"
    "<link name='c'/></robot>")
