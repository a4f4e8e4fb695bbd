#include "tests/support/random_model.h"

#include <Eigen/Geometry>

#include "engine/model/model_builder.h"

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
      body.parent = names[std::uniform_int_distribution<int>(0, k - 1)(rng)];
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
  }
  return q;
}

Eigen::VectorXd randomVector(int n, std::mt19937& rng, double scale) {
  std::normal_distribution<double> d(0.0, scale);
  Eigen::VectorXd v(n);
  for (int k = 0; k < n; ++k) v(k) = d(rng);
  return v;
}

}  // namespace hilsim::test
