#include "tests/support/random_model.h"

#include <Eigen/Geometry>

#include "engine/algorithms/forward_kinematics.h"
#include "engine/builder/closure_builder.h"
#include "engine/builder/model_builder.h"
#include "engine/builder/system_generator.h"

namespace hilsim::test {

namespace {

double uniform(std::mt19937& rng, double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(rng);
}

Vector3 randomUnitVector(std::mt19937& rng) {
  std::normal_distribution<double> n(0.0, 1.0);
  Vector3 v(n(rng), n(rng), n(rng));
  return v.normalized();
}

Matrix3 randomRotation(std::mt19937& rng) {
  std::normal_distribution<double> n(0.0, 1.0);
  Eigen::Quaterniond q(n(rng), n(rng), n(rng), n(rng));
  return q.normalized().toRotationMatrix();
}

}  // namespace

Inertia randomInertia(std::mt19937& rng) {
  const double mass = uniform(rng, 0.2, 5.0);
  // principal moments from a random box-like mass distribution: always satisfy the triangle
  // inequality
  const double a = uniform(rng, 0.01, 0.2), b = uniform(rng, 0.01, 0.2), c = uniform(rng, 0.01, 0.2);
  const Vector3 principal = mass * Vector3(b * b + c * c, a * a + c * c, a * a + b * b) / 12.0;
  const Matrix3 r = randomRotation(rng);
  const Vector3 com(uniform(rng, -0.2, 0.2), uniform(rng, -0.2, 0.2), uniform(rng, -0.2, 0.2));
  return Inertia(mass, com, r * principal.asDiagonal() * r.transpose());
}

Model randomTree(std::mt19937& rng, const RandomTreeOptions& options) {
  ModelBuilder builder("random_tree");
  std::vector<std::string> names;
  for (int k = 0; k < options.bodies; ++k) {
    BodySpec body;
    body.name = "body" + std::to_string(k);
    if (k == 0) {
      body.parent = "world";
    } else {
      const int parent = options.chain ? k - 1 : std::uniform_int_distribution<int>(0, k - 1)(rng);
      body.parent = names[parent];
    }
    body.placement = Transform(randomRotation(rng), Vector3(uniform(rng, -0.5, 0.5),
                                                            uniform(rng, -0.5, 0.5),
                                                            uniform(rng, -0.5, 0.5)));
    body.inertia = randomInertia(rng);
    if (k == 0 && options.free_flyer_root) {
      body.joint = Joint::freeFlyer();
    } else if (!options.all_joint_types) {
      body.joint = Joint::revolute(randomUnitVector(rng));
    } else {
      switch (std::uniform_int_distribution<int>(0, 5)(rng)) {
        case 0:
        case 1: body.joint = Joint::revolute(randomUnitVector(rng)); break;
        case 2: body.joint = Joint::prismatic(randomUnitVector(rng)); break;
        case 3: body.joint = Joint::spherical(); break;
        case 4: body.joint = Joint::planar(randomUnitVector(rng)); break;
        default: body.joint = Joint::revolute(Vector3::UnitZ()); break;
      }
    }
    if (options.damping_and_armature) {
      body.properties.damping = uniform(rng, 0.0, 0.5);
      body.properties.armature = uniform(rng, 0.0, 0.1);
    }
    names.push_back(body.name);
    builder.addBody(body);
    if (uniform(rng, 0.0, 1.0) < options.fixed_fraction) {
      BodySpec welded;
      welded.name = body.name + "_welded";
      welded.parent = body.name;
      welded.placement = Transform(randomRotation(rng), Vector3(0.1, 0.0, 0.05));
      welded.inertia = randomInertia(rng);
      builder.addBody(welded);
      names.push_back(welded.name);
    }
  }
  return builder.build();
}

Eigen::VectorXd randomConfiguration(const Model& model, std::mt19937& rng) {
  Eigen::VectorXd q(model.nq);
  for (int i = 1; i < model.nbodies; ++i) {
    double* qi = q.data() + model.idx_q[i];
    switch (model.joints[i].type) {
      case JointType::kRevolute:
      case JointType::kPrismatic: {
        // within the joint's limits where it has finite ones, else a full turn
        const int iv = model.idx_v[i];
        const double lo = std::isfinite(model.lower_limit(iv)) ? model.lower_limit(iv) : -M_PI;
        const double hi = std::isfinite(model.upper_limit(iv)) ? model.upper_limit(iv) : M_PI;
        qi[0] = uniform(rng, lo, hi);
        break;
      }
      case JointType::kPlanar:
        for (int k = 0; k < 3; ++k) qi[k] = uniform(rng, -1.0, 1.0);
        break;
      case JointType::kSpherical: {
        const Eigen::Quaterniond r(randomRotation(rng));
        qi[0] = r.w(); qi[1] = r.x(); qi[2] = r.y(); qi[3] = r.z();
        break;
      }
      case JointType::kFreeFlyer: {
        for (int k = 0; k < 3; ++k) qi[k] = uniform(rng, -1.0, 1.0);
        const Eigen::Quaterniond r(randomRotation(rng));
        qi[3] = r.w(); qi[4] = r.x(); qi[5] = r.y(); qi[6] = r.z();
        break;
      }
    }
    // modal coordinates: small deformations
    for (int k = 0; k < model.nmodes[i]; ++k) q[model.idxModesQ(i) + k] = uniform(rng, -0.2, 0.2);
  }
  return q;
}

namespace {

Matrix3X randomMatrix3X(std::mt19937& rng, int cols, double scale) {
  Matrix3X m(3, cols);
  for (int c = 0; c < cols; ++c)
    for (int r = 0; r < 3; ++r) m(r, c) = uniform(rng, -scale, scale);
  return m;
}

// q (3 × n²) symmetric in its mode pair, as a second derivative must be
Matrix3X randomSecondOrder(std::mt19937& rng, int n, double scale) {
  Matrix3X q(3, n * n);
  for (int r = 0; r < n; ++r)
    for (int s = r; s < n; ++s) {
      const Matrix3X col = randomMatrix3X(rng, 1, scale);
      q.col(r * n + s) = col;
      q.col(s * n + r) = col;
    }
  return q;
}

Eigen::MatrixXd randomSpd(std::mt19937& rng, int n, double scale, double floor) {
  Eigen::MatrixXd a(n, n);
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < n; ++c) a(r, c) = uniform(rng, -1.0, 1.0);
  Eigen::MatrixXd spd = scale * a * a.transpose();
  spd.diagonal().array() += floor;
  return spd;
}

}  // namespace

FlexibleBody randomFlexibleBody(std::mt19937& rng, int nmodes, bool geometric_stiffening,
                                bool hinge_node, int attach_nodes) {
  const int n = nmodes;
  std::vector<LumpedMassNode> lumped(6);
  for (LumpedMassNode& node : lumped) {
    node.position = Vector3(uniform(rng, -0.5, 0.5), uniform(rng, -0.5, 0.5), uniform(rng, -0.5, 0.5));
    node.mass = uniform(rng, 0.1, 1.0);
    const Matrix3X j = randomMatrix3X(rng, 3, 0.1);
    node.rotary_inertia = j * j.transpose();
    node.slope = randomMatrix3X(rng, n, 0.5);
    node.translation = randomMatrix3X(rng, n, 0.3);
    node.second_order = randomSecondOrder(rng, n, 0.3);
  }
  FlexibleBody body = reduceLumpedMasses(lumped, n, geometric_stiffening);
  body.stiffness = randomSpd(rng, n, 50.0, 10.0);
  body.damping = randomSpd(rng, n, 0.2, 0.0);
  for (int k = 0; k < attach_nodes; ++k) {
    ModalNode node;
    node.name = "node" + std::to_string(k);
    node.position = Vector3(uniform(rng, -0.5, 0.5), uniform(rng, -0.5, 0.5), uniform(rng, -0.5, 0.5));
    node.slope = randomMatrix3X(rng, n, 0.5);
    node.translation = randomMatrix3X(rng, n, 0.3);
    node.second_order = randomSecondOrder(rng, n, 0.3);
    body.nodes.push_back(node);
  }
  if (hinge_node) {
    ModalNode node;
    node.name = "hinge";
    node.position = Vector3(uniform(rng, -0.3, 0.3), uniform(rng, -0.3, 0.3), uniform(rng, -0.3, 0.3));
    node.slope = randomMatrix3X(rng, n, 0.5);
    node.translation = randomMatrix3X(rng, n, 0.3);
    node.second_order = randomSecondOrder(rng, n, 0.3);
    body.nodes.push_back(node);
    body.hinge_node = static_cast<int>(body.nodes.size()) - 1;
  }
  return body;
}

Model randomFlexibleTree(std::mt19937& rng, const RandomFlexibleTreeOptions& options) {
  ModelBuilder builder("random_flexible_tree");
  std::vector<std::string> names;
  std::vector<int> modes;
  for (int k = 0; k < options.bodies; ++k) {
    BodySpec body;
    body.name = "body" + std::to_string(k);
    const int parent = k == 0 ? -1 : std::uniform_int_distribution<int>(0, k - 1)(rng);
    body.parent = parent < 0 ? "world" : names[parent];
    body.placement = Transform(randomRotation(rng), Vector3(uniform(rng, -0.5, 0.5),
                                                            uniform(rng, -0.5, 0.5),
                                                            uniform(rng, -0.5, 0.5)));
    if (k == 0 && options.free_flyer_root) {
      body.joint = Joint::freeFlyer();
    } else {
      switch (std::uniform_int_distribution<int>(0, 4)(rng)) {
        case 0:
        case 1: body.joint = Joint::revolute(randomUnitVector(rng)); break;
        case 2: body.joint = Joint::prismatic(randomUnitVector(rng)); break;
        case 3: body.joint = Joint::spherical(); break;
        default: body.joint = Joint::planar(randomUnitVector(rng)); break;
      }
    }
    body.properties.damping = uniform(rng, 0.0, 0.5);
    body.properties.armature = uniform(rng, 0.0, 0.1);
    int n = 0;
    if (uniform(rng, 0.0, 1.0) < options.flexible_fraction) {
      n = std::uniform_int_distribution<int>(1, options.max_modes)(rng);
      const bool hinge = uniform(rng, 0.0, 1.0) < options.hinge_node_fraction;
      body.flexible = randomFlexibleBody(rng, n, options.geometric_stiffening, hinge, 3);
    } else {
      body.inertia = randomInertia(rng);
    }
    if (parent >= 0 && modes[parent] > 0 && uniform(rng, 0.0, 1.0) < 0.8)
      body.parent_node = "node" + std::to_string(std::uniform_int_distribution<int>(0, 2)(rng));
    names.push_back(body.name);
    modes.push_back(n);
    builder.addBody(body);
  }
  return builder.build();
}

Eigen::VectorXd randomVector(int n, std::mt19937& rng, double scale) {
  std::normal_distribution<double> d(0.0, scale);
  Eigen::VectorXd v(n);
  for (int k = 0; k < n; ++k) v(k) = d(rng);
  return v;
}

Model masslessChain() {
  ModelBuilder builder("massless_chain");
  const Inertia link(2.0, Vector3(0.0, 0.0, 0.15), Vector3(0.02, 0.02, 0.005).asDiagonal());
  const Transform up(Matrix3::Identity(), Vector3(0.0, 0.0, 0.3));
  JointProperties damped{0.1, 0.0}, compliant{0.5, 0.0};
  compliant.stiffness = 1e3;
  builder.addBody("link0", "world", Joint::revolute(Vector3::UnitZ()), Transform(), link, damped);
  builder.addBody("cross", "link0", Joint::revolute(Vector3::UnitY()), up, Inertia(), damped);
  builder.addBody("link1", "cross", Joint::revolute(Vector3::UnitX()), Transform(), link, damped);
  builder.addBody("slider", "link1", Joint::prismatic(Vector3::UnitZ()), up, Inertia(), compliant);
  builder.addBody("tip", "slider", Joint::revolute(Vector3::UnitY()), Transform(), link, damped);
  builder.addBody("flag", "tip", Joint::revolute(Vector3::UnitZ()), up, Inertia(), damped);
  return builder.build();
}

void addRandomClosures(Model& model, const Eigen::VectorXd& q, int count, std::mt19937& rng,
                       int first_type) {
  constexpr ClosureType kTypes[] = {ClosureType::kBall, ClosureType::kRevolute,
                                    ClosureType::kPrismatic, ClosureType::kWeld,
                                    ClosureType::kDistance};
  std::vector<ClosureType> types;
  for (int k = 0; k < count; ++k) types.push_back(kTypes[(first_type + k) % 5]);
  addRandomClosures(model, q, types, rng);
}

void addRandomClosures(Model& model, const Eigen::VectorXd& q, std::span<const ClosureType> types,
                       std::mt19937& rng) {
  Data data(model, DataWorkspace::kPerBody);
  forwardKinematics(model, data, q);
  std::uniform_int_distribution<int> body(0, model.nbodies - 1);
  const auto pose = [&](int b) { return b == 0 ? Transform() : data.X_WB[b]; };
  for (const ClosureType type : types) {
    int a = body(rng), b = body(rng);
    while (b == a) b = body(rng);
    LoopClosureSpec spec;
    spec.name = "closure" + std::to_string(model.loops.size());
    spec.type = type;
    spec.body_a = model.body_names[a];
    spec.body_b = model.body_names[b];
    spec.frame_a = Transform(randomRotation(rng),
                             Vector3(uniform(rng, -0.3, 0.3), uniform(rng, -0.3, 0.3),
                                     uniform(rng, -0.3, 0.3)));
    spec.axis = randomUnitVector(rng);
    const Transform X_WA = pose(a) * spec.frame_a;
    if (spec.type == ClosureType::kDistance) {
      spec.frame_b = Transform(Matrix3::Identity(), Vector3(uniform(rng, -0.3, 0.3),
                                                            uniform(rng, -0.3, 0.3),
                                                            uniform(rng, -0.3, 0.3)));
      spec.length = (pose(b).actPoint(spec.frame_b.translation) - X_WA.translation).norm();
    } else {
      spec.frame_b = pose(b).inverse() * X_WA;
    }
    addLoopClosure(model, spec);
  }
}

LoopCase randomLoopCase(std::mt19937& rng, int bodies, int closures, int first_type) {
  RandomTreeOptions options;
  options.bodies = bodies;
  LoopCase c{randomTree(rng, options), {}, {}, {}};
  c.q = randomConfiguration(c.model, rng);
  addRandomClosures(c.model, c.q, closures, rng, first_type);
  c.v = randomVector(c.model.nv, rng);
  c.tau = randomVector(c.model.nv, rng, 5.0);
  return c;
}

Model pinnedArc(int bodies) {
  constexpr double kBend = 0.08;  // [rad] per joint: 64 links turn through 5 rad
  SystemSpec spec;
  spec.shape = GeneratedShape::kChain;
  spec.bodies = bodies;
  Model model = generateSystem(spec, "arc" + std::to_string(bodies));
  for (int i = 1; i < model.nbodies; ++i)
    setInitialPosition(model, model.joint_names[i], std::vector<double>{kBend});
  Data data(model);
  forwardKinematics(model, data, model.initialConfiguration());
  LoopClosureSpec pin;
  pin.name = "tip_pin";
  pin.type = ClosureType::kRevolute;
  pin.body_a = "link" + std::to_string(bodies);
  pin.frame_a = Transform(Matrix3::Identity(), Vector3(spec.link_length, 0, 0));
  pin.body_b = "world";
  pin.frame_b =
      Transform(Matrix3::Identity(), data.X_WB[bodies].actPoint(pin.frame_a.translation));
  pin.axis = Vector3::UnitY();
  addLoopClosure(model, pin);
  return model;
}

}  // namespace hilsim::test
