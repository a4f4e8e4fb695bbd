// Mechanical energy of the system.
// References:
//   Featherstone, "Rigid Body Dynamics Algorithms", Springer (2008) [RBDA]
//   Jain, Rodriguez, "Recursive Dynamics for Flexible Multibody Systems Using Spatial
//   Operators", JPL Publication 90-26 (1990) [seed 004]
#pragma once

#include "engine/model/data.h"

namespace hilsim {

/// Kinetic energy ½ Σ V_kᵀ M_k V_k + ½ Σ armature_d v_d² [J], into data.kinetic_energy.
double kineticEnergy(const Model& model, Data& data, const Eigen::VectorXd& q,
                     const Eigen::VectorXd& v);

/// Gravitational potential energy −Σ m_k gᵀ c_k [J] (zero with every centre of mass at the world
/// origin), into data.potential_energy.
double potentialEnergy(const Model& model, Data& data, const Eigen::VectorXd& q);

}  // namespace hilsim
