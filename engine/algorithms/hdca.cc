#include "engine/algorithms/hdca.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cassert>
#include <cmath>
#include <type_traits>

#include <Eigen/Cholesky>

#include "engine/algorithms/forward_kinematics.h"
#include "engine/algorithms/joint_kinematics.h"
#include "engine/algorithms/rnea.h"
#include "engine/parallel/executor.h"

namespace hilsim {

namespace {

// Two unit vectors completing unit `a` to a right-handed orthonormal basis
void completeBasis(const Vector3& a, Vector3& n1, Vector3& n2) {
  // the coordinate axis least aligned with a: some component of a unit vector is below 0.6
  const Vector3 e = std::abs(a.x()) < 0.6   ? Vector3::UnitX()
                    : std::abs(a.y()) < 0.6 ? Vector3::UnitY()
                                            : Vector3::UnitZ();
  n1 = a.cross(e).normalized();
  n2 = a.cross(n1);
}

// Motion and force columns given about point o (W axes) taken about W's origin
template <typename Columns>
void motionAboutOrigin(const Vector3& o, Columns&& columns) {
  for (int c = 0; c < columns.cols(); ++c)
    columns.col(c).template tail<3>() += o.cross(Vector3(columns.col(c).template head<3>()));
}

// The paper's shift S₁₂ (14) for l = r₂ − r₁: a force at r₂ taken about r₁, S₁₂ F = [n + l × f; f]
// (angular part first), and its transpose on a motion at r₁ taken about r₂, [ω; v + ω × l]
[[gnu::always_inline]] inline Vector6 shiftForce(const Vector3& l, const Vector6& F) {
  Vector6 out = F;
  out.head<3>() += l.cross(Vector3(F.tail<3>()));
  return out;
}
[[gnu::always_inline]] inline Vector6 shiftMotion(const Vector3& l, const Vector6& V) {
  Vector6 out = V;
  out.tail<3>() += Vector3(V.head<3>()).cross(l);
  return out;
}

// X ← S X Sᵀ for a spatial inertia X about r₂ taken about r₁, l = r₂ − r₁, S = [[1, l̃], [0, 1]]
// (angular rows first): the momentum about r₁ of a velocity given about r₁
void shiftInertia(const Vector3& l, Matrix6& X) {
  const Matrix3 L = skew(l);
  const Matrix3 C = X.block<3, 3>(3, 0);
  Matrix3 B = X.block<3, 3>(0, 3);
  B.noalias() += L * X.block<3, 3>(3, 3);
  X.block<3, 3>(0, 0).noalias() += L * C;
  X.block<3, 3>(0, 0).noalias() -= B * L;
  X.block<3, 3>(0, 3) = B;
  X.block<3, 3>(3, 0) = B.transpose();
}

bool isPathRoot(const AssemblyTree& tree, int node) {
  return tree.path_root[tree.path_top[node]] == node;
}

// A path of one block joins the body it hangs off (or the world) as aba's bodies do, through its
// top joint's articulated inertia: no compound, mobility or gain factor (docs/HDCA.md, "Blocks")
bool isArticulatedPath(const AssemblyTree& tree, int top) {
  return tree.nodes[tree.path_root[top]].left < 0;
}

// Joint i's bases at the kinematics in Data: its motion subspace H, written about the child
// frame's origin o (the joint's point, the handles' of both sides) where it is orthonormal
// (Hᵀ H = 1), and the constraint directions D that complete it to an orthonormal basis there
// (seed 001 (10)–(11): "ones and zeros" in the joint's frame, here in W's axes); H about W's
// origin as well, for phase 2 (and phase 1 with kAboutOrigin, which needs no other).
template <bool kAboutOrigin>
void jointBases(const Model& model, Data& data, int i) {
  Data::Hdca& h = data.hdca;
  const Matrix3& R = data.X_WB[i].rotation;
  const Vector3& o = data.X_WB[i].translation;
  const Joint& joint = model.joints[i];
  const int nv = model.nv_joint[i];
  // only a joint that joins two nodes of the assembly carries impulses along D: one inside a
  // block, or atop a path of one block (joined as aba joins bodies), needs H alone
  const AssemblyTree& tree = h.tree;
  const bool handle = tree.nodes[tree.leaf[i]].body == i &&
                      !(tree.path_root[i] >= 0 && isArticulatedPath(tree, i));
  if (!handle && (joint.type == JointType::kRevolute || joint.type == JointType::kPrismatic)) {
    // the common case without the general path's dynamic-size columns: H about W's origin is
    // the kinematics' column of S_W ([a; o × a] or [0; a]), and about o, [a; 0] or [0; a]
    const auto column = data.S_W.col(model.idx_v[i]);
    h.motion[i].col(0) = column;
    if constexpr (!kAboutOrigin) {
      auto local = h.local[i].col(0);
      if (joint.type == JointType::kRevolute) {
        local.head<3>() = column.head<3>();
        local.tail<3>().setZero();
      } else {
        local = column;
      }
    }
    return;
  }
  Matrix6X H0 = Matrix6X::Zero(6, nv), D0 = Matrix6X::Zero(6, 6 - nv);
  Vector3 n1, n2;
  switch (joint.type) {
    case JointType::kRevolute: {
      const Vector3 a = R * joint.axis;
      H0.col(0).head<3>() = a;
      if (!handle) break;
      completeBasis(a, n1, n2);
      D0.col(0).head<3>() = n1;
      D0.col(1).head<3>() = n2;
      D0.block<3, 3>(3, 2).setIdentity();
      break;
    }
    case JointType::kPrismatic: {
      const Vector3 a = R * joint.axis;
      H0.col(0).tail<3>() = a;
      if (!handle) break;
      completeBasis(a, n1, n2);
      D0.block<3, 3>(0, 0).setIdentity();
      D0.col(3).tail<3>() = n1;
      D0.col(4).tail<3>() = n2;
      break;
    }
    case JointType::kSpherical:
      H0.block<3, 3>(0, 0) = R;
      D0.block<3, 3>(3, 0).setIdentity();
      break;
    case JointType::kFreeFlyer: {
      const Matrix3 R_WJ = data.X_WB[model.parent[i]].rotation * model.joint_placement[i].rotation;
      H0.block<3, 3>(3, 0) = R_WJ;
      H0.block<3, 3>(0, 3) = R;
      break;
    }
    case JointType::kPlanar: {
      const Matrix3 R_WJ = data.X_WB[model.parent[i]].rotation * model.joint_placement[i].rotation;
      const Vector3 n = R_WJ * joint.axis, e1 = R_WJ * joint.plane_e1, e2 = R_WJ * joint.plane_e2;
      H0.col(0).tail<3>() = e1;
      H0.col(1).tail<3>() = e2;
      H0.col(2).head<3>() = n;
      D0.col(0).head<3>() = e1;
      D0.col(1).head<3>() = e2;
      D0.col(2).tail<3>() = n;
      break;
    }
  }
  auto motion = h.motion[i].leftCols(nv);
  motion = H0;
  motionAboutOrigin(o, motion);
  h.local[i].leftCols(nv) = H0;
  if (!handle) return;
  // the impulses the joint carries: along D freely, along H of a dof with armature a the rotor's
  // −a v (docs/HDCA.md, "Armature")
  Matrix6& basis = h.impulse_basis[i];
  basis.setZero();  // impulseFactor reads all six columns
  basis.leftCols(6 - nv) = D0;
  int k = 6 - nv;
  h.compliance[i].setZero();
  for (int c = 0; c < nv; ++c) {
    const double armature = model.armature[model.idx_v[i] + c];
    if (armature <= 0.0) continue;
    basis.col(k) = H0.col(c);
    h.compliance[i][k] = 1.0 / armature;
    ++k;
  }
  h.impulse_count[i] = k;
}

// L with L Lᵀ = A, A symmetric positive definite (lower triangle read), N × N. Fixed-size loops:
// the leaves and nodes factor one such matrix each, where Eigen's general solvers spend more on
// set-up than on the arithmetic.
template <int N>
void cholesky(const Eigen::Matrix<double, N, N>& A, Eigen::Matrix<double, N, N>& L) {
  L.setZero();
  for (int j = 0; j < N; ++j) {
    double d = A(j, j);
    for (int k = 0; k < j; ++k) d -= L(j, k) * L(j, k);
    assert(d > 0.0);  // else not positive definite: NaN follows
    const double l_jj = std::sqrt(d), inverse = 1.0 / l_jj;
    L(j, j) = l_jj;
    for (int i = j + 1; i < N; ++i) {
      double s = A(i, j);
      for (int k = 0; k < j; ++k) s -= L(i, k) * L(j, k);
      L(i, j) = s * inverse;
    }
  }
}

// X ← X L⁻ᵀ, column by column (X Lᵀ = X_in), for X with N columns
template <int N>
void solveTransposedFactor(const Eigen::Matrix<double, N, N>& L, Eigen::Matrix<double, 6, N>& X) {
  for (int j = 0; j < N; ++j) {
    for (int k = 0; k < j; ++k) X.col(j) -= L(j, k) * X.col(k);
    X.col(j) *= 1.0 / L(j, j);
  }
}

// Z with W = −Z Zᵀ = −B (Bᵀ Ψ B + E)⁻¹ Bᵀ for joint j, whose K impulse columns are B, and the
// mobility Ψ across it (seed 001 (27), with the armature's compliance E): the impulse the joint
// carries is W times the velocity jump it would have without it. Z = B L⁻ᵀ, L Lᵀ = Bᵀ Ψ B + E.
template <int K>
void impulseFactor(const Data::Hdca& h, int j, const Matrix6& psi,
                   Eigen::Matrix<double, 6, K>& Z) {
  if constexpr (K > 0) {
    const auto B = h.impulse_basis[j].leftCols<K>();
    Eigen::Matrix<double, 6, K> psi_B;
    Eigen::Matrix<double, K, K> G, L;
    psi_B.noalias() = psi * B;
    G.noalias() = B.transpose() * psi_B;
    G.diagonal() += h.compliance[j].head<K>();
    cholesky<K>(G, L);
    Z = B;
    solveTransposedFactor<K>(L, Z);
  }
}

// The same into a 6 × 6 factor whose columns beyond the joint's impulse count are zero (the
// vector passes read all six)
template <int K>
void impulseFactorPadded(const Data::Hdca& h, int j, const Matrix6& psi, Matrix6& Z) {
  Eigen::Matrix<double, 6, K> z;
  impulseFactor<K>(h, j, psi, z);
  Z.leftCols<K>() = z;
  Z.rightCols<6 - K>().setZero();
}

// Calls f(std::integral_constant<int, K>) for K = count ∈ [0, 6]: the joint's impulse count as a
// compile-time size, so its products run on 6 × K blocks
template <typename F>
void withImpulseCount(int count, F&& f) {
  switch (count) {
    case 0: f(std::integral_constant<int, 0>()); break;
    case 1: f(std::integral_constant<int, 1>()); break;
    case 2: f(std::integral_constant<int, 2>()); break;
    case 3: f(std::integral_constant<int, 3>()); break;
    case 4: f(std::integral_constant<int, 4>()); break;
    case 5: f(std::integral_constant<int, 5>()); break;
    default: f(std::integral_constant<int, 6>()); break;
  }
}

// The factor Z of a path's top joint j from the mobility Ψ of the assembled path (43)
void pathFactor(const Data::Hdca& h, int j, const Matrix6& psi, Matrix6& Z) {
  withImpulseCount(h.impulse_count[j], [&](auto k) {
    impulseFactorPadded<decltype(k)::value>(h, j, psi, Z);
  });
}

// out (+)= Σ_c columns.col(c) x[c] over the first n columns, out −= with kSubtract: a joint's 1 to 6
// columns without a dynamic-size product's set-up
template <bool kSubtract = false>
[[gnu::always_inline]] inline void addColumns(const Matrix6& columns, const double* x, int n,
                                              Vector6& out) {
  for (int c = 0; c < n; ++c) {
    if constexpr (kSubtract)
      out -= columns.col(c) * x[c];
    else
      out += columns.col(c) * x[c];
  }
}

// x[c] = columns.col(c) · y over the first n columns
[[gnu::always_inline]] inline void dotColumns(const Matrix6& columns, const Vector6& y, int n,
                                              double* x) {
  for (int c = 0; c < n; ++c) x[c] = columns.col(c).dot(y);
}

// r_b − r_a of two bodies' origins
[[gnu::always_inline]] inline Vector3 offset(const Data& data, int a, int b) {
  return data.X_WB[b].translation - data.X_WB[a].translation;
}

// Phase 1's two frames (docs/HDCA.md, "Representation"). Where some path has several blocks,
// every body's terms are about its own origin (the paper's handles): the blocks' mobilities
// invert 6 × 6 inertias, which about a distant point lose digits. Where every path is one block
// (kAboutOrigin) no such inverse is taken, and phase 1 works about W's origin as aba does: no
// shifts between bodies, a joint's columns those about W's origin.
template <bool kAboutOrigin>
[[gnu::always_inline]] inline const Matrix6& jointColumns(const Data::Hdca& h, int i) {
  if constexpr (kAboutOrigin)
    return h.motion[i];
  else
    return h.local[i];
}

// A force (momentum, impulse) about body `child`'s point taken about its parent's
template <bool kAboutOrigin>
[[gnu::always_inline]] inline Vector6 forceToParent(const Data& data, int parent, int child,
                                                    const Vector6& F) {
  if constexpr (kAboutOrigin)
    return F;
  else
    return shiftForce(offset(data, parent, child), F);
}

// A velocity about body `parent`'s point taken about its child's
template <bool kAboutOrigin>
[[gnu::always_inline]] inline Vector6 motionToChild(const Data& data, int parent, int child,
                                                    const Vector6& V) {
  if constexpr (kAboutOrigin)
    return V;
  else
    return shiftMotion(offset(data, parent, child), V);
}

}  // namespace

// Below kMinSharedWeight every pass runs on the calling thread alone: on two threads here a
// 512-body chain or tree breaks even, a 384-body one takes 1.1 to 1.5 times as long
// (docs/PERFORMANCE.md, "Hamiltonian divide-and-conquer")
bool hdcaSplitsPasses(const AssemblyTree& tree) {
  return !tree.post_weight.empty() && tree.post_weight.back() >= kMinSharedWeight;
}

namespace {

int threadCount(const Data& data) {
  if (data.executor == nullptr || !hdcaSplitsPasses(data.hdca.tree)) return 1;
  return data.executor->concurrency();
}

// The first node of thread t's range among `threads` (the nodes are numbered in post-order):
// equal shares of their cost (post_weight)
int rangeBegin(const AssemblyTree& tree, int threads, int t) {
  if (t == threads) return static_cast<int>(tree.nodes.size());
  const double target = tree.post_weight.back() * t / threads;
  return static_cast<int>(
      std::lower_bound(tree.post_weight.begin(), tree.post_weight.end() - 1, target) -
      tree.post_weight.begin());
}

// Runs body(i) for every body i, independent of each other: on several threads, each body on the
// thread whose range of the post-order holds its leaf, the one that assembles it and reads what
// body(i) writes
template <typename Body>
void overBodies(const Model& model, Data& data, Body& body) {
  const int threads = threadCount(data);
  if (threads == 1) {
    for (int i = 1; i < model.nbodies; ++i) body(i);
    return;
  }
  const AssemblyTree& tree = data.hdca.tree;
  auto run = [&](int t, int) {
    const int end = rangeBegin(tree, threads, t + 1);
    for (int k = rangeBegin(tree, threads, t); k < end; ++k) {
      const AssemblyTree::Node& node = tree.nodes[k];
      if (node.left < 0) tree.forEachBlockBody(node, body);
    }
  };
  runOnEveryThread(data.executor, run);
}

// Runs body(node) for every node of the assembly tree, each after the nodes it reads: up the tree
// (kUp: a node after its children, a leaf after the paths hanging off its body) or down it (a node
// after its consumer). On several threads each takes a contiguous range [a, b) of the tree's
// post-order, of equal cost, for the whole pass (one hand-over): up, first the nodes whose
// subtree lies inside the range, in post-order (no waiting), then the few whose subtree reaches
// before a (the ancestors of the range's first nodes, which wait for the thread before); down,
// the same sequence reversed. A thread waits, spinning, only for a node of another thread's range:
// such a node publishes its results by stamping the pass into `finished` (release), the reader
// waits for that stamp (acquire); nodes read by their own thread alone are neither stamped nor
// waited for (a 1024-body tree has 512 blocks, half of them one body). Every node's arithmetic
// is the same on every thread count. A body that takes (node, thread) is told which thread runs
// it.
template <bool kUp, typename Body>
void overTree(Data& data, Body& body_of) {
  const auto body = [&](int n, int t) {
    if constexpr (std::is_invocable_v<Body&, int, int>)
      body_of(n, t);
    else
      body_of(n);
  };
  Data::Hdca& h = data.hdca;
  const AssemblyTree& tree = h.tree;
  const int nodes = static_cast<int>(tree.nodes.size());
  const int threads = threadCount(data);
  if (threads == 1) {
    if constexpr (kUp)
      for (int n = 0; n < nodes; ++n) body(n, 0);
    else
      for (int n = nodes - 1; n >= 0; --n) body(n, 0);
    return;
  }
  const std::uint32_t pass = ++h.pass;
  std::uint32_t* finished = h.finished.data();
  auto run = [&](int t, int) {
    const int a = rangeBegin(tree, threads, t), b = rangeBegin(tree, threads, t + 1);
    // a node of [a, b) was done before by this thread (post-order): only another range's waits
    const auto wait = [&](int m) {
      if (m >= a && m < b) return;
      std::atomic_ref<std::uint32_t> stamp(finished[m]);
      while (stamp.load(std::memory_order_acquire) != pass) spinPause();
    };
    const auto publish = [&](int n) {
      std::atomic_ref<std::uint32_t>(finished[n]).store(pass, std::memory_order_release);
    };
    const auto inside = [&](int n) { return tree.subtree_begin[n] >= a; };
    if constexpr (kUp) {
      // an inside node reads only its subtree's nodes, this thread's; a node is read by its
      // consumer alone, which lies after it: another thread's if at b or beyond
      const auto step = [&](int n, bool reads_before_a) {
        const AssemblyTree::Node& node = tree.nodes[n];
        if (reads_before_a) {
          if (node.left >= 0) {
            wait(node.left);
            wait(node.right);
          } else {
            tree.forEachBlockBody(node, [&](int i) {
              for (int c = tree.light_begin[i]; c < tree.light_begin[i + 1]; ++c)
                wait(tree.path_root[tree.light[c]]);
            });
          }
        }
        body(n, t);
        if (tree.consumer[n] >= b) publish(n);
      };
      for (int n = a; n < b; ++n)
        if (inside(n)) step(n, false);
      for (int n = a; n < b; ++n)
        if (!inside(n)) step(n, true);
    } else {
      // a node reads its consumer, after it; it is read by the nodes it consumes, its subtree's:
      // another thread's only if the subtree reaches before a
      for (int n = b - 1; n >= a; --n) {
        if (inside(n)) continue;
        if (tree.consumer[n] >= 0) wait(tree.consumer[n]);
        body(n, t);
        publish(n);
      }
      for (int n = b - 1; n >= a; --n) {
        if (!inside(n)) continue;
        if (tree.consumer[n] >= 0) wait(tree.consumer[n]);
        body(n, t);
      }
    }
  };
  runOnEveryThread(data.executor, run);
}

// Calls f(c) for each child c of body i: its heavy child, then its light ones in ascending order
template <typename F>
[[gnu::always_inline]] inline void forEachChild(const AssemblyTree& tree, int i, F&& f) {
  if (tree.heavy_child[i] > 0) f(tree.heavy_child[i]);
  for (int k = tree.light_begin[i]; k < tree.light_begin[i + 1]; ++k) f(tree.light[k]);
}

// An up step that does nothing: downThenUp's down pass alone
struct NoStep {
  void operator()(int, int) const {}
};

// The body-by-body sweeps along the model's tree (the kinematics, the velocities and momenta of
// the refinement), on the threads of the passes over the assembly tree: body i on the thread
// whose range holds its leaf, which assembles it and reads what the sweep writes (on a sweep of
// its own, the calling thread would fetch every body's terms from the other cores' caches, and
// they theirs back: a 1024-body kinematics pass took twice as long on two threads as on one).
// In one hand-over, each thread runs down(i) for its bodies, each after down(parent), then
// up(i) (kUpWaits: after up(c) of every child c). A thread goes over its bodies in ascending
// index (descending on the way up) and takes each whose parent (children) is done, leaving the
// others for its next round: a body whose parent lies deep in another thread's range holds up
// only its own subtree. A body's parent has the lower index, so the lowest body not yet done
// always can be: the rounds end. Body stamps share `finished` with the node stamps: the down
// steps stamp pass P, the up steps P + 1. Every body's arithmetic is the same on every thread
// count.
template <bool kUpWaits, typename Down, typename Up>
void downThenUp(const Model& model, Data& data, Down& down, Up& up) {
  Data::Hdca& h = data.hdca;
  const AssemblyTree& tree = h.tree;
  const int threads = threadCount(data);
  constexpr bool kHasDown = !std::is_same_v<std::remove_const_t<Down>, NoStep>;
  constexpr bool kHasUp = !std::is_same_v<std::remove_const_t<Up>, NoStep>;
  if (threads == 1) {
    if constexpr (kHasDown)
      for (int i = 1; i < model.nbodies; ++i) down(i, 0);
    if constexpr (kHasUp)
      for (int i = model.nbodies - 1; i >= 1; --i) up(i, 0);
    return;
  }
  if constexpr (!kHasDown) {
    if (!tree.has_compounds) {
      // an up pass alone where every path is one block: its bodies in path order are a valid
      // order, so the pass over the assembly tree carries it block by block, each thread over its
      // own nodes only (the rounds below scan every body each round: on a 1024-body tree the
      // sweep took longer on two threads than on one, 14.2 against 12.8 µs; 12.2 µs so)
      auto up_block = [&](int n, int t) {
        const AssemblyTree::Node& node = tree.nodes[n];
        for (int k = node.count - 1; k >= 0; --k) up(tree.block_body[node.block + k], t);
      };
      overTree<true>(data, up_block);
      return;
    }
  }
  h.pass += 2;
  const std::uint32_t down_pass = h.pass - 1, up_pass = h.pass;
  std::uint32_t* finished = h.finished.data();
  const auto stampOf = [&](int i) {
    return std::atomic_ref<std::uint32_t>(finished[i]).load(std::memory_order_acquire);
  };
  // down_pass or up_pass (up follows down)
  const auto downDone = [&](int i) {
    return static_cast<std::int32_t>(stampOf(i) - down_pass) >= 0;
  };
  const auto stamp = [&](int i, std::uint32_t pass) {
    std::atomic_ref<std::uint32_t>(finished[i]).store(pass, std::memory_order_release);
  };
  auto run = [&](int t, int) {
    const int a = rangeBegin(tree, threads, t), b = rangeBegin(tree, threads, t + 1);
    const auto owns = [&](int i) { return tree.leaf[i] >= a && tree.leaf[i] < b; };
    for (bool left = true; left;) {
      left = false;
      for (int i = 1; kHasDown && i < model.nbodies; ++i) {
        if (!owns(i) || downDone(i)) continue;
        if (const int parent = model.parent[i]; parent > 0 && !downDone(parent)) {
          left = true;
          continue;
        }
        down(i, t);
        stamp(i, down_pass);
      }
      if (left) spinPause();
    }
    if constexpr (!kHasUp) return;
    for (bool left = true; left;) {
      left = false;
      for (int i = model.nbodies - 1; i >= 1; --i) {
        if (!owns(i) || stampOf(i) == up_pass) continue;
        if constexpr (kUpWaits) {
          bool ready = true;
          forEachChild(tree, i, [&](int c) { ready = ready && stampOf(c) == up_pass; });
          if (!ready) {
            left = true;
            continue;
          }
        }
        up(i, t);
        stamp(i, up_pass);
      }
      if (left) spinPause();
    }
  };
  runOnEveryThread(data.executor, run);
}

// Body i's joint bases, inertia and weight in W, at its kinematics
template <bool kAboutOrigin>
void bodyTerms(const Model& model, Data& data, int i) {
  Data::Hdca& h = data.hdca;
  jointBases<kAboutOrigin>(model, data, i);
  // about W's origin: its 6 × 6 for phase 1 (which articulates there) and the sweep; else the
  // ten numbers, all the sweep needs (phase 1 works about the body's origin)
  const Inertia inertia_W = model.inertias[i].transformed(data.X_WB[i]);
  if constexpr (kAboutOrigin)
    inertia_W.matrix(h.inertia[i]);
  else
    data.inertia_W[i] = inertia_W;
  const Vector3 force = inertia_W.mass * model.gravity;
  h.weight[i].head<3>() = inertia_W.com.cross(force);
  h.weight[i].tail<3>() = force;
}

// The kinematics at q (forwardKinematics' steps, down the tree), each body on the thread that
// assembles it (its terms follow there, assembleBlock)
void kinematics(const Model& model, Data& data, const Eigen::VectorXd& q) {
  auto down = [&](int i, int) { detail::jointPositionStep(model, data, i, q.data()); };
  const NoStep up;
  downThenUp<false>(model, data, down, up);
}

// Body i's inertia about its origin (about W's origin with kAboutOrigin; W's axes) with the
// paths hanging off it absorbed: A = M₁ − Σ S₁ⱼ W S₁ⱼᵀ, each path's impulse on it being
// −W (ξ₁₀ − V) at its top joint's point rⱼ
template <bool kAboutOrigin>
void absorbedInertia(const Model& model, const Data& data, int i, Matrix6& A) {
  const Data::Hdca& h = data.hdca;
  const AssemblyTree& tree = h.tree;
  if constexpr (kAboutOrigin) {
    A = h.inertia[i];
  } else {
    const Matrix3& R = data.X_WB[i].rotation;
    const Inertia& body = model.inertias[i];
    Inertia(body.mass, R * body.com, R * body.inertia_com * R.transpose()).matrix(A);
  }
  for (int k = tree.light_begin[i]; k < tree.light_begin[i + 1]; ++k) {
    const int c = tree.light[k];
    if (kAboutOrigin || isArticulatedPath(tree, c)) {  // (about W's origin, every path)
      if constexpr (kAboutOrigin) {
        A += h.passed_inertia[c];
      } else {
        Matrix6 passed = h.passed_inertia[c];
        shiftInertia(offset(data, i, c), passed);
        A += passed;
      }
      continue;
    }
    Matrix6 Z = h.path_factor[c];
    for (int col = 0; col < 6; ++col) Z.col(col) = forceToParent<kAboutOrigin>(data, i, c, Z.col(col));
    A.noalias() += Z * Z.transpose();
  }
}

// Across joint i inside a block (docs/HDCA.md, "Blocks"): with Iᴬ the articulated inertia of
// the block's bodies from i down, about i's origin, U = Iᴬ H and D = Hᵀ Iᴬ H + armature; the
// joint passes Iᴬ − U D⁻¹ Uᵀ to its parent. G (when given) maps the impulse T₂ at the block's
// lower handle to β; past the joint G − U D⁻¹ Hᵀ G, and Y gathers Gᵀ H D⁻¹ Hᵀ G, the lower
// handle's mobility through the joint's own motion.
template <int N>
void articulateJoint(const Model& model, Data::Hdca& h, int i, const Matrix6& columns,
                     Matrix6& inertia, Matrix6* G, Matrix6& Y) {
  if constexpr (N > 0) {
    const auto H = columns.leftCols<N>();
    Eigen::Matrix<double, 6, N> U;
    U.noalias() = inertia * H;
    Eigen::Matrix<double, N, N> D;
    D.noalias() = H.transpose() * U;
    for (int c = 0; c < N; ++c) D(c, c) += model.armature[model.idx_v[i] + c];
    const Eigen::Matrix<double, N, N> D_inv = D.inverse();
    h.joint_gain[i].leftCols<N>() = U;
    h.joint_inertia_inverse[i].topLeftCorner<N, N>() = D_inv;
    Eigen::Matrix<double, 6, N> U_D;
    U_D.noalias() = U * D_inv;
    inertia.noalias() -= U_D * U.transpose();
    if (G != nullptr) {
      Eigen::Matrix<double, N, 6> W, D_W;
      W.noalias() = H.transpose() * *G;
      G->noalias() -= U_D * W;
      D_W.noalias() = D_inv * W;
      Y.noalias() += W.transpose() * D_W;
    }
  }
}

// A leaf: its block's two-handle mobility equations (15)–(16), V₁ = ξ₁₁ T₁ + ξ₁₂ T₂ + ξ₁₀ and
// V₂ = ξ₂₁ T₁ + ξ₂₂ T₂ + ξ₂₀, by the articulated recursion from its last body up: β = Iᴬ V − J
// of the impulse J a joint carries is affine in T₂ (β ∋ G T₂), and at the first body
// V₁ = Φ (T₁ + H₁ p₁ − β₁), Φ = (Iᴬ)⁻¹: ξ₁₁ = Φ, ξ₁₂ = −Φ G, ξ₂₂ = Gᵀ Φ G + Y. A block of one
// body is the paper's body (§3.1): ξ₁₂ = Φ S₁₂, ξ₂₂ = S₁₂ᵀ Φ S₁₂. At a path's end no T₂ acts:
// ξ₁₂ = ξ₂₂ = 0.
template <bool kAboutOrigin>
void assembleBlock(const Model& model, Data& data, int n) {
  Data::Hdca& h = data.hdca;
  const AssemblyTree& tree = h.tree;
  const AssemblyTree::Node& node = tree.nodes[n];
  const int* bodies = tree.block_body.data() + node.block;
  const int m = node.count, last = bodies[m - 1], below = tree.heavy_child[last];
  // the block's bodies' terms first, where they are used next (phase 1 and the sweep read them
  // on this thread too)
  for (int k = 0; k < m; ++k) bodyTerms<kAboutOrigin>(model, data, bodies[k]);
  Matrix6 inertia, G, Y;
  absorbedInertia<kAboutOrigin>(model, data, last, inertia);
  if (below > 0) {
    // T₂ at the lower handle, about the last body's origin: β ∋ −S T₂
    G = -Matrix6::Identity();
    if constexpr (!kAboutOrigin) G.topRightCorner<3, 3>() = -skew(offset(data, last, below));
    Y.setZero();
  }
  for (int k = m - 1; k >= 1; --k) {
    const int i = bodies[k], j = bodies[k - 1];
    withImpulseCount(model.nv_joint[i], [&](auto count) {
      articulateJoint<decltype(count)::value>(model, h, i, jointColumns<kAboutOrigin>(h, i),
                                              inertia, below > 0 ? &G : nullptr, Y);
    });
    if constexpr (!kAboutOrigin) shiftInertia(offset(data, j, i), inertia);
    Matrix6 A;
    absorbedInertia<kAboutOrigin>(model, data, j, A);
    inertia += A;
    if (below > 0)
      for (int c = 0; c < 6; ++c) G.col(c) = forceToParent<kAboutOrigin>(data, j, i, G.col(c));
  }
  if (kAboutOrigin || isPathRoot(tree, n)) {
    // a path of one block: its top joint passes Iᴬ − U D⁻¹ Uᵀ to the body it hangs off
    const int top = bodies[0];
    Matrix6& passed = h.passed_inertia[top];
    passed = inertia;
    withImpulseCount(model.nv_joint[top], [&](auto count) {
      articulateJoint<decltype(count)::value>(model, h, top, jointColumns<kAboutOrigin>(h, top),
                                              passed, nullptr, Y);
    });
    return;
  }
  Matrix6 L, L_inv_t = Matrix6::Identity();
  cholesky<6>(inertia, L);
  solveTransposedFactor<6>(L, L_inv_t);
  Matrix6& mobility = h.mobility[bodies[0]];
  mobility.noalias() = L_inv_t * L_inv_t.transpose();
  h.xi11[n] = mobility;
  if (below > 0) {
    h.xi12[n].noalias() = -mobility * G;
    h.xi22[n] = Y;
    h.xi22[n].noalias() -= G.transpose() * h.xi12[n];
  } else {
    h.xi12[n].setZero();
    h.xi22[n].setZero();
  }
}

// Phase 1's matrices up the tree: leaves (blocks), compounds (seed 001 (34)–(36)), and at each
// path's root the factor of its top joint's gain
template <bool kAboutOrigin>
void assembleMatrices(const Model& model, Data& data) {
  Data::Hdca& h = data.hdca;
  const AssemblyTree& tree = h.tree;
  auto node_step = [&](int n) {
    const AssemblyTree::Node& node = tree.nodes[n];
    if (node.left < 0) {
      assembleBlock<kAboutOrigin>(model, data, n);
    } else {
      const int L = node.left, R = node.right;
      const Matrix6 psi = h.xi11[R] + h.xi22[L];
      withImpulseCount(h.impulse_count[node.joint], [&](auto count) {
        constexpr int K = decltype(count)::value;
        // (34)–(35) with W = −Z Zᵀ: U = ξ₁₂ᴬ Z, V = ξ₂₁ᴮ Z, on the joint's K impulse columns
        impulseFactorPadded<K>(h, node.joint, psi, h.gain_factor[n]);
        const auto Z = h.gain_factor[n].leftCols<K>();
        Eigen::Matrix<double, 6, K> U, V;
        U.noalias() = h.xi12[L] * Z;
        V.noalias() = h.xi12[R].transpose() * Z;
        h.xi11[n] = h.xi11[L];
        h.xi11[n].noalias() -= U * U.transpose();
        h.xi12[n].noalias() = U * V.transpose();
        h.xi22[n] = h.xi22[R];
        h.xi22[n].noalias() -= V * V.transpose();
      });
    }
    if (node.left >= 0 && isPathRoot(tree, n)) {
      const int top = tree.path_top[n];
      pathFactor(h, top, h.xi11[n], h.path_factor[top]);
    }
  };
  overTree<true>(data, node_step);
}

// x = D⁻¹ (p − Hᵀ β − Uᵀ V) for joint i inside a block (p null: zero; V null: zero), its rates
// of the momenta p, the bias β below it and its parent's velocity V about its point
template <bool kAboutOrigin>
[[gnu::always_inline]] inline void blockJointRates(const Data::Hdca& h, int i, int nv,
                                                  const double* p, const Vector6& beta,
                                                  const Vector6* V, double* x) {
  if (nv == 1) {  // revolute and prismatic joints: no loops
    double r = -jointColumns<kAboutOrigin>(h, i).col(0).dot(beta);
    if (p != nullptr) r += p[0];
    if (V != nullptr) r -= h.joint_gain[i].col(0).dot(*V);
    x[0] = h.joint_inertia_inverse[i](0, 0) * r;
    return;
  }
  double r[6];
  for (int c = 0; c < nv; ++c) {
    r[c] = -jointColumns<kAboutOrigin>(h, i).col(c).dot(beta);
    if (p != nullptr) r[c] += p[c];
    if (V != nullptr) r[c] -= h.joint_gain[i].col(c).dot(*V);
  }
  const Matrix6& D_inv = h.joint_inertia_inverse[i];
  for (int a = 0; a < nv; ++a) {
    x[a] = 0.0;
    for (int c = 0; c < nv; ++c) x[a] += D_inv(a, c) * r[c];
  }
}

// β + U D⁻¹ (p − Hᵀ β) into β: what joint i passes to its parent of the bias below it (p null:
// zero momenta, T₂'s share)
template <bool kAboutOrigin>
[[gnu::always_inline]] inline void carryAcrossJoint(const Data::Hdca& h, int i, int nv,
                                                   const double* p, Vector6& beta) {
  double x[6];
  blockJointRates<kAboutOrigin>(h, i, nv, p, beta, nullptr, x);
  addColumns(h.joint_gain[i], x, nv, beta);
}

// Body i's velocity inside a block from its parent j's: V = S ᵀ V_j + H x (about i's origin);
// the joint's rates x into `rates` when given (p is read before: `rates` may alias p)
template <bool kAboutOrigin>
[[gnu::always_inline]] inline Vector6 blockVelocity(const Model& model, const Data& data, int j,
                                                   int i,
                      const Eigen::Ref<const Eigen::VectorXd>& p, const Vector6& V_parent,
                                                   double* rates = nullptr) {
  const Data::Hdca& h = data.hdca;
  const int nv = model.nv_joint[i];
  Vector6 V = motionToChild<kAboutOrigin>(data, j, i, V_parent);
  double x[6];
  blockJointRates<kAboutOrigin>(h, i, nv, p.data() + model.idx_v[i], h.momentum_bias[i], &V, x);
  addColumns(jointColumns<kAboutOrigin>(h, i), x, nv, V);
  if (rates != nullptr)
    for (int c = 0; c < nv; ++c) rates[c] = x[c];
  return V;
}

// Phase 1's vectors for momenta p: ξ₁₀, ξ₂₀, β up the tree and the impulses down it, with the
// applied loads accumulated over the same tree when `loads` (seed 001 (70)–(76)); every body's
// velocity into h.velocity, and into v the rates of every joint the recursion of its block
// solves for (all but the first joint of a block in mobility form: firstJointRates). p's entries
// are read before v's are written: v may be p.
template <bool kLoads, bool kAboutOrigin>
void propagateMomenta(const Model& model, Data& data, const Eigen::Ref<const Eigen::VectorXd>& p,
                      Eigen::Ref<Eigen::VectorXd> v) {
  Data::Hdca& h = data.hdca;
  const AssemblyTree& tree = h.tree;
  // about W's origin the bodies' velocities are the sweep's (velocity_W: subtreeMomenta need
  // not compute them again at this solve's v)
  std::vector<Vector6>& velocity = kAboutOrigin ? h.velocity_W : h.velocity;
  // β of body b gains the momenta its light children's joints carry out and the impulses their
  // paths take, −W ξ₁₀ (seed 001 §3.1, with P̄₂ = −P̄₁ of the child: the note's minus sign), each
  // through its shift S_bc; with kLoads `load` gains their paths' loads
  const auto lightPaths = [&](int b, Vector6& beta, Vector6& load) {
    for (int k = tree.light_begin[b]; k < tree.light_begin[b + 1]; ++k) {
      const int c = tree.light[k], root = tree.path_root[c];
      Vector6 out;
      if (kAboutOrigin || isArticulatedPath(tree, c)) {  // β + U D⁻¹ (p − Hᵀ β), top joint
        out = h.momentum_bias[c];
        carryAcrossJoint<kAboutOrigin>(h, c, model.nv_joint[c], p.data() + model.idx_v[c], out);
      } else {
        out.setZero();
        addColumns(jointColumns<kAboutOrigin>(h, c), p.data() + model.idx_v[c], model.nv_joint[c],
                   out);
        const Matrix6& Z = h.path_factor[c];  // −W ξ₁₀ = Z Zᵀ ξ₁₀
        out.noalias() -= Z * (Z.transpose() * h.xi10[root]);
      }
      beta += forceToParent<kAboutOrigin>(data, b, c, out);
      if constexpr (kLoads) load += h.load[root];
    }
  };
  auto up_step = [&](int n) {
    const AssemblyTree::Node& node = tree.nodes[n];
    if (node.left < 0) {
      // the block's recursion with T₁ = T₂ = 0 (docs/HDCA.md, "Blocks"): β from its last body
      // up (every term about the body's origin), then ξ₁₀ = Φ (H₁ p₁ − β₁) and, down again,
      // the velocity at the lower handle, ξ₂₀
      const int* bodies = tree.block_body.data() + node.block;
      const int m = node.count, first = bodies[0], last = bodies[m - 1];
      const int below = tree.heavy_child[last];
      Vector6 beta = Vector6::Zero(), load = Vector6::Zero();
      if (below > 0) {
        Vector6 out = Vector6::Zero();
        addColumns(jointColumns<kAboutOrigin>(h, below), p.data() + model.idx_v[below],
                   model.nv_joint[below], out);
        beta = forceToParent<kAboutOrigin>(data, last, below, out);
      }
      for (int k = m - 1; k >= 0; --k) {
        const int i = bodies[k];
        if constexpr (kLoads) load += h.weight[i];
        lightPaths(i, beta, load);
        // at a path's end nothing lies beyond the block: the load so far is the subtree's
        if constexpr (kLoads)
          if (below == 0) h.subtree_load[i] = load;
        h.momentum_bias[i] = beta;
        if (k == 0) break;
        carryAcrossJoint<kAboutOrigin>(h, i, model.nv_joint[i], p.data() + model.idx_v[i], beta);
        beta = forceToParent<kAboutOrigin>(data, bodies[k - 1], i, beta);
      }
      if (kAboutOrigin || isPathRoot(tree, n)) {  // a path of one block: no mobility equations
        if constexpr (kLoads) h.load[n] = load;
        return;
      }
      Vector6 e = -beta;
      addColumns(jointColumns<kAboutOrigin>(h, first), p.data() + model.idx_v[first],
                 model.nv_joint[first], e);
      h.xi10[n].noalias() = h.mobility[first] * e;
      if (below > 0) {
        Vector6 V = h.xi10[n];
        for (int k = 1; k < m; ++k)
          V = blockVelocity<kAboutOrigin>(model, data, bodies[k - 1], bodies[k], p, V);
        h.xi20[n] = motionToChild<kAboutOrigin>(data, last, below, V);
      } else {
        h.xi20[n].setZero();
      }
      if constexpr (kLoads) h.load[n] = load;
    } else {
      const int L = node.left, R = node.right;
      const Matrix6& Z = h.gain_factor[n];
      h.beta[n].noalias() = -Z * (Z.transpose() * (h.xi10[R] - h.xi20[L]));  // (28)
      h.xi10[n] = h.xi10[L];
      h.xi10[n].noalias() -= h.xi12[L] * h.beta[n];  // (36)
      h.xi20[n] = h.xi20[R];
      h.xi20[n].noalias() += h.xi12[R].transpose() * h.beta[n];
      if constexpr (kLoads) h.load[n] = h.load[L] + h.load[R];  // (58)
    }
  };
  overTree<true>(data, up_step);

  auto down_step = [&](int n) {
    const AssemblyTree::Node& node = tree.nodes[n];
    if (node.left >= 0 && isPathRoot(tree, n)) {
      // the top joint on its parent body (or the world): (43) with the parent's velocity
      const int top = tree.path_top[n], parent = model.parent[top];
      Vector6 jump = h.xi10[n];
      if (parent > 0) jump -= motionToChild<kAboutOrigin>(data, parent, top, velocity[parent]);
      const Matrix6& Z = h.path_factor[top];
      h.T1[n].noalias() = -Z * (Z.transpose() * jump);
      h.T2[n].setZero();  // a path ends in a free tip
      if constexpr (kLoads) h.beyond[n].setZero();
    }
    if (node.left >= 0) {
      const int L = node.left, R = node.right;
      h.T1[L] = h.T1[n];
      h.T2[R] = h.T2[n];
      Vector6 jump;  // (29)
      jump.noalias() = h.xi12[R] * h.T2[n];
      jump.noalias() -= h.xi12[L].transpose() * h.T1[n];
      const Matrix6& Z = h.gain_factor[n];
      h.T1[R] = h.beta[n];
      h.T1[R].noalias() -= Z * (Z.transpose() * jump);
      h.T2[L] = -h.T1[R];
      if constexpr (kLoads) {  // (76)
        h.beyond[R] = h.beyond[n];
        h.beyond[L] = h.load[R] + h.beyond[n];
      }
    } else {
      // the block's recursion with its impulses T₁, T₂: T₂'s share of β (−S T₂ at the last body,
      // carried up as β is), V₁ = Φ (T₁ + H₁ p₁ − β₁), then each body's velocity from its
      // parent's, about its origin
      const int* bodies = tree.block_body.data() + node.block;
      const int m = node.count, first = bodies[0], last = bodies[m - 1];
      const int below = tree.heavy_child[last];
      if (below > 0) {
        Vector6 delta = -forceToParent<kAboutOrigin>(data, last, below, h.T2[n]);
        for (int k = m - 1; k >= 0; --k) {
          const int i = bodies[k];
          h.momentum_bias[i] += delta;
          if (k == 0) break;
          carryAcrossJoint<kAboutOrigin>(h, i, model.nv_joint[i], nullptr, delta);
          delta = forceToParent<kAboutOrigin>(data, bodies[k - 1], i, delta);
        }
      }
      Vector6 V;
      if (kAboutOrigin || isPathRoot(tree, n)) {
        // a path of one block: its top joint's rates as aba's, from the parent's velocity
        const int parent = std::max(model.parent[first], 0);
        V = blockVelocity<kAboutOrigin>(model, data, parent, first, p,
                          parent > 0 ? velocity[parent] : Vector6::Zero().eval(),
                          v.data() + model.idx_v[first]);
        if constexpr (kLoads) h.beyond[n].setZero();
      } else {
        Vector6 e = h.T1[n] - h.momentum_bias[first];
        addColumns(jointColumns<kAboutOrigin>(h, first), p.data() + model.idx_v[first],
                   model.nv_joint[first], e);
        V.noalias() = h.mobility[first] * e;
      }
      velocity[first] = V;
      for (int k = 1; k < m; ++k) {
        V = blockVelocity<kAboutOrigin>(model, data, bodies[k - 1], bodies[k], p, V,
                          v.data() + model.idx_v[bodies[k]]);
        velocity[bodies[k]] = V;
      }
      if constexpr (kLoads) {
        // the load beyond each joint: the block's bodies below it and what lies past the block
        // (at a path's end, nothing: the up pass had them)
        if (below == 0) return;
        Vector6 load = h.beyond[n];
        for (int k = m - 1; k >= 0; --k) {
          const int i = bodies[k];
          load += h.weight[i];
          for (int c = tree.light_begin[i]; c < tree.light_begin[i + 1]; ++c)
            load += h.load[tree.path_root[tree.light[c]]];
          h.subtree_load[i] = load;
        }
      }
    }
  };
  overTree<false>(data, down_step);
}

// (23): v = Hᵀ (V₁ᴮ − V₂ᴬ) of the bodies' velocities phase 1 left, both sides at the joint's
// point, for the first joint of each block in mobility form (its parent's velocity is another
// block's); the other joints' rates came with their velocities (propagateMomenta)
void firstJointRates(const Model& model, Data& data, Eigen::Ref<Eigen::VectorXd> v) {
  const Data::Hdca& h = data.hdca;
  const AssemblyTree& tree = h.tree;
  if (!tree.has_compounds) return;  // none: every path is one block
  auto body = [&](int i) {
    const int n = tree.leaf[i];
    if (tree.nodes[n].body != i || isPathRoot(tree, n)) return;
    const int parent = model.parent[i];
    Vector6 jump = h.velocity[i];
    if (parent > 0) jump -= shiftMotion(offset(data, parent, i), h.velocity[parent]);
    dotColumns(h.local[i], jump, model.nv_joint[i], v.data() + model.idx_v[i]);
  };
  overBodies(model, data, body);
}

// The refinement's sweep at joint velocities v (subtreeMomenta below): per thread, the largest
// residual magnitude it found, one cache line each (no line with two writers)
constexpr int kMaxThreads = 64;  // as sessions and the command line allow
struct alignas(64) Largest {
  double value;  // set for the threads that run (not all 64: 4 KiB to clear on a small model)
};
using LargestPerThread = std::array<Largest, kMaxThreads>;

// p − Hᵀ P̄ − armature v of body i's joint into h.residual (P̄ its subtree's momentum, final),
// its largest magnitude into `largest` (NaN stays)
[[gnu::always_inline]] inline void jointResidual(const Model& model, Data::Hdca& h, int i,
                                                 const double* p, const double* v,
                                                 double& largest) {
  const int iv = model.idx_v[i], nv = model.nv_joint[i];
  double* r = h.residual.data() + iv;
  dotColumns(h.motion[i], h.momentum[i], nv, r);
  for (int c = 0; c < nv; ++c) {
    r[c] = p[iv + c] - r[c] - model.armature[iv + c] * v[iv + c];
    const double size = std::abs(r[c]);
    if (size > largest || std::isnan(size)) largest = size;
  }
}

// The sweep body by body (every path one block): each body's velocity from its parent's (unless
// velocity_W holds them already), each momentum from its children's, in downThenUp's two rounds
void sweepAlongBodies(const Model& model, Data& data, const Eigen::Ref<const Eigen::VectorXd>& v,
                      const double* p, bool velocities_known, LargestPerThread& worst) {
  Data::Hdca& h = data.hdca;
  const AssemblyTree& tree = h.tree;
  auto down = [&](int i, int) {
    const int parent = model.parent[i];
    if (parent > 0)
      h.velocity_W[i] = h.velocity_W[parent];
    else
      h.velocity_W[i].setZero();
    addColumns(h.motion[i], v.data() + model.idx_v[i], model.nv_joint[i], h.velocity_W[i]);
  };
  auto up = [&](int i, int t) {
    Vector6& momentum = h.momentum[i];
    momentum.noalias() = h.inertia[i] * h.velocity_W[i];  // (every path one block)
    forEachChild(tree, i, [&](int c) { momentum += h.momentum[c]; });
    if (p != nullptr) jointResidual(model, h, i, p, v.data(), worst[t].value);
  };
  if (velocities_known) {
    const NoStep none;
    downThenUp<true>(model, data, none, up);
  } else {
    downThenUp<true>(model, data, down, up);
  }
}

// A sum along each path taken over the assembly tree, on one slot per node (`sums`). Up: a
// leaf's total from leaf_total(n), which also writes its bodies' running sums, a compound's the
// sum of its children's. Down: each slot becomes what the path holds before the node's range,
// counted from the path's top (kFromTop) or from its end; a path's root takes root_value(n), a
// compound passes its slot to the child the count reaches first and its slot plus that child's
// total to the other, and leaf_apply(n, t, slot) adds it to the leaf's bodies on thread t.
template <typename LeafTotal>
void scanUp(Data& data, std::vector<Vector6>& sums, LeafTotal& leaf_total) {
  const AssemblyTree& tree = data.hdca.tree;
  auto step = [&](int n) {
    const AssemblyTree::Node& node = tree.nodes[n];
    if (node.left >= 0)
      sums[n] = sums[node.left] + sums[node.right];
    else
      sums[n] = leaf_total(n);
  };
  overTree<true>(data, step);
}

template <bool kFromTop, typename RootValue, typename LeafApply>
void scanDown(Data& data, std::vector<Vector6>& sums, RootValue& root_value,
              LeafApply& leaf_apply) {
  const AssemblyTree& tree = data.hdca.tree;
  auto step = [&](int n, int t) {
    const AssemblyTree::Node& node = tree.nodes[n];
    if (isPathRoot(tree, n)) sums[n] = root_value(n);
    if (node.left < 0) {
      leaf_apply(n, t, sums[n]);
      return;
    }
    const int first = kFromTop ? node.left : node.right;
    const int second = kFromTop ? node.right : node.left;
    const Vector6 first_total = sums[first];
    sums[first] = sums[n];
    sums[second] = sums[n] + first_total;
  };
  overTree<false>(data, step);
}

// The sweep as scans over the assembly tree (paths of several blocks). About W's origin a body's
// velocity is the sum of its joint's and its ancestors' H v, and a body's momentum the sum over
// its subtree: both are scans along each path, taken over the assembly tree as its vector passes
// are, so that a chain's halves run at once (body by body, one waits for the other's whole
// half). The velocities from each path's top (twist_sum: a path starts at the velocity of the
// body it hangs off), the momenta from each path's end (momentum_sum, the light paths' totals
// joined at the bodies they hang off; nothing lies below a path's end).
void scanOverAssemblyTree(const Model& model, Data& data,
                          const Eigen::Ref<const Eigen::VectorXd>& v, const double* p,
                          LargestPerThread& worst) {
  Data::Hdca& h = data.hdca;
  const AssemblyTree& tree = h.tree;
  const auto bodiesOf = [&](int n) { return tree.block_body.data() + tree.nodes[n].block; };
  auto twists = [&](int n) {
    const int* bodies = bodiesOf(n);
    Vector6 sum = Vector6::Zero();
    for (int k = 0; k < tree.nodes[n].count; ++k) {
      const int i = bodies[k];
      addColumns(h.motion[i], v.data() + model.idx_v[i], model.nv_joint[i], sum);
      h.velocity_W[i] = sum;
    }
    return sum;
  };
  scanUp(data, h.twist_sum, twists);
  auto path_start = [&](int n) {
    const int parent = model.parent[tree.path_top[n]];
    return parent > 0 ? h.velocity_W[parent] : Vector6::Zero().eval();
  };
  auto add_offset = [&](int n, int, const Vector6& offset) {
    const int* bodies = bodiesOf(n);
    for (int k = 0; k < tree.nodes[n].count; ++k) h.velocity_W[bodies[k]] += offset;
  };
  scanDown<true>(data, h.twist_sum, path_start, add_offset);
  auto momenta = [&](int n) {
    const int* bodies = bodiesOf(n);
    Vector6 sum = Vector6::Zero();
    for (int k = tree.nodes[n].count - 1; k >= 0; --k) {
      const int i = bodies[k];
      Vector6 momentum;
      data.inertia_W[i].apply(h.velocity_W[i], momentum);
      sum += momentum;
      for (int c = tree.light_begin[i]; c < tree.light_begin[i + 1]; ++c)
        sum += h.momentum_sum[tree.path_root[tree.light[c]]];  // the light path's total
      h.momentum[i] = sum;
    }
    return sum;
  };
  scanUp(data, h.momentum_sum, momenta);
  auto path_end = [](int) { return Vector6::Zero().eval(); };
  auto add_below = [&](int n, int t, const Vector6& below) {
    const int* bodies = bodiesOf(n);
    for (int k = 0; k < tree.nodes[n].count; ++k) {
      const int i = bodies[k];
      h.momentum[i] += below;
      if (p != nullptr) jointResidual(model, h, i, p, v.data(), worst[t].value);
    }
  };
  scanDown<false>(data, h.momentum_sum, path_end, add_below);
}

// The bodies' velocities V of joint velocities v about W's origin (into h.velocity_W) and each
// subtree's momentum Σ I V (into h.momentum), at the kinematics of the last assembly. With
// velocities_known, velocity_W holds V of v already: phase 1 about W's origin (every path one
// block) computed them as the sweep does, operation for operation, as it solved for v. With p,
// the residual p − M v = p − Hᵀ Σ I V − armature v into h.residual; returns its largest
// magnitude (NaN if any entry is NaN), else 0. By the model's tree alone (never the thread
// count, so that results stay bit-identical): scans where some path has several blocks, which
// cost a tree of one-block paths a sixth more on one thread and gain it nothing on two.
double subtreeMomenta(const Model& model, Data& data, const Eigen::Ref<const Eigen::VectorXd>& v,
                      const double* p = nullptr, bool velocities_known = false) {
  const int threads = threadCount(data);
  assert(threads <= kMaxThreads);
  LargestPerThread worst;
  for (int t = 0; t < threads; ++t) worst[t].value = 0.0;
  if (data.hdca.tree.has_compounds)
    scanOverAssemblyTree(model, data, v, p, worst);
  else
    sweepAlongBodies(model, data, v, p, velocities_known, worst);
  double largest = 0.0;
  for (int t = 0; t < threads; ++t)
    if (worst[t].value > largest || std::isnan(worst[t].value)) largest = worst[t].value;
  return largest;
}

// ṡ · F for column c of body i's joint: ṡ = V ×ᵐ s with V the body the column is fixed in (the
// child; the parent for a translation column of a free or planar joint, whose direction the
// parent carries). With s = [a; b], V = [ω; u], F = [n; f]: (ω × a) · n + (ω × b + u × a) · f.
[[gnu::always_inline]] inline double columnRateDot(const Model& model, const Data::Hdca& h, int i,
                                                   int c, const Vector6& F) {
  const auto s = h.motion[i].col(c);
  const Vector3 a = s.head<3>(), b = s.tail<3>();
  const bool translation = a.x() == 0.0 && a.y() == 0.0 && a.z() == 0.0;
  const int parent = model.parent[i];
  if (translation && parent <= 0) return 0.0;
  const Vector6& V = translation ? h.velocity_W[parent] : h.velocity_W[i];
  const Vector3 w = V.head<3>(), u = V.tail<3>();
  return w.cross(a).dot(F.head<3>()) + (w.cross(b) + u.cross(a)).dot(F.tail<3>());
}

// What phase 2 needs beside the sweep: (77) writes p_dot from q and tau
struct MomentumRates {
  const Eigen::VectorXd& q;
  const Eigen::VectorXd& tau;
  Eigen::VectorXd& p_dot;
};

// (77) about a fixed point for body i's joint at joint velocities v, after the sweep at v:
// ṗ = τ − d v − k (q − q_ref) + Hᵀ Q̄ + Ḣᵀ P̄, Ḣ = V ×ᵐ H (columnRateDot)
[[gnu::always_inline]] inline void jointMomentumRates(const Model& model, const Data::Hdca& h,
                                                      int i, const double* v,
                                                      const MomentumRates& rates) {
  const int nv = model.nv_joint[i], iv = model.idx_v[i];
  for (int c = 0; c < nv; ++c) {
    const int d = iv + c;
    double rate = rates.tau[d] - model.damping[d] * v[d] + h.motion[i].col(c).dot(h.subtree_load[i]) +
                  columnRateDot(model, h, i, c, h.momentum[i]);
    if (nv == 1 && model.stiffness[d] != 0.0)
      rate -= model.stiffness[d] * (rates.q[model.idx_q[i]] - model.spring_reference[d]);
    rates.p_dot[d] = rate;
  }
}

// (77) of every joint from the sweep at v in Data (subtreeMomenta)
void momentumRatesFromSweep(const Model& model, Data& data, const Eigen::VectorXd& v,
                            const MomentumRates& rates) {
  auto body = [&](int i) { jointMomentumRates(model, data.hdca, i, v.data(), rates); };
  overBodies(model, data, body);
}

// v = M⁻¹ p by the tree, refined: v ← v + M⁻¹ (p − M v) while the residual is above round-off, at
// most kRefinementSteps times. The mobility form subtracts where a light body carries a heavy one
// and loses digits in proportion (1e-5 relative on a random 18-body chain, docs/HDCA.md
// "Accuracy"); p − M v costs one O(n) sweep, a correction one vector pass of the tree. With
// kLoads, the applied loads' subtree sums as well. `p` and `v` may be the same vector. Returns
// whether the sweep in Data (velocity_W, momentum) is that of the v returned, as phase 2 needs;
// if so and `rates` is given, ṗ of (77) as well, in the same pass as v's copy.
constexpr int kRefinementSteps = 2;
constexpr double kResidualTolerance = 1e-14;  // of |p|∞: the sweep's own round-off is ~1e-15
template <bool kLoads>
bool solveRefined(const Model& model, Data& data, const Eigen::Ref<const Eigen::VectorXd>& p,
                  Eigen::Ref<Eigen::VectorXd> v, const MomentumRates* rates = nullptr) {
  Data::Hdca& h = data.hdca;
  const bool about_origin = !h.tree.has_compounds;
  if (about_origin)
    propagateMomenta<kLoads, true>(model, data, p, h.estimate);
  else
    propagateMomenta<kLoads, false>(model, data, p, h.estimate);
  firstJointRates(model, data, h.estimate);
  const double tolerance = kResidualTolerance * p.lpNorm<Eigen::Infinity>();
  h.corrections = 0;
  bool swept_at_estimate = false;
  for (int step = 0; step < kRefinementSteps; ++step) {
    // phase 1 about W's origin left the velocities of the first estimate in velocity_W
    const bool velocities_known = about_origin && step == 0;
    if (!(subtreeMomenta(model, data, h.estimate, p.data(), velocities_known) > tolerance)) {
      swept_at_estimate = true;
      break;
    }
    if (about_origin)
      propagateMomenta<false, true>(model, data, h.residual, h.residual);
    else
      propagateMomenta<false, false>(model, data, h.residual, h.residual);
    firstJointRates(model, data, h.residual);
    auto add = [&](int i) {
      const int iv = model.idx_v[i];
      for (int c = 0; c < model.nv_joint[i]; ++c) h.estimate[iv + c] += h.residual[iv + c];
    };
    overBodies(model, data, add);
    ++h.corrections;
  }
  // p is no longer read: v may be p. Each body's entries on its own thread (as the vectors
  // above): written there, they are read there next
  if (!swept_at_estimate) rates = nullptr;
  auto copy = [&](int i) {
    const int iv = model.idx_v[i];
    for (int c = 0; c < model.nv_joint[i]; ++c) v[iv + c] = h.estimate[iv + c];
    if (rates != nullptr) jointMomentumRates(model, h, i, h.estimate.data(), *rates);
  };
  overBodies(model, data, copy);
  return swept_at_estimate;
}

}  // namespace

void hdcaAssembleAtKinematics(const Model& model, Data& data) {
  assert(holds(data.workspace, DataWorkspace::kDivideAndConquer));
  assert(!model.has_flexible_bodies);
  if (data.hdca.tree.has_compounds)
    assembleMatrices<false>(model, data);
  else
    assembleMatrices<true>(model, data);
}

void hdcaAssemble(const Model& model, Data& data, const Eigen::VectorXd& q) {
  assert(holds(data.workspace, DataWorkspace::kDivideAndConquer));
  assert(!model.has_flexible_bodies);
  kinematics(model, data, q);
  hdcaAssembleAtKinematics(model, data);
}

void hdcaVelocities(const Model& model, Data& data, const Eigen::Ref<const Eigen::VectorXd>& p,
                    Eigen::Ref<Eigen::VectorXd> v) {
  solveRefined<false>(model, data, p, v);
}

void hdcaVelocitiesWithLoads(const Model& model, Data& data,
                             const Eigen::Ref<const Eigen::VectorXd>& p,
                             Eigen::Ref<Eigen::VectorXd> v) {
  solveRefined<true>(model, data, p, v);
}

void hdcaMomentumRatesAt(const Model& model, Data& data, const Eigen::VectorXd& q,
                         const Eigen::VectorXd& v, const Eigen::VectorXd& tau,
                         Eigen::VectorXd& p_dot) {
  subtreeMomenta(model, data, v);
  momentumRatesFromSweep(model, data, v, MomentumRates{q, tau, p_dot});
}

void hdcaImpulseRates(const Model& model, const Data& data,
                      const std::vector<Vector6>& subtree_impulse,
                      const std::vector<Vector6>& subtree_impulse_rate, Eigen::VectorXd& out) {
  const Data::Hdca& h = data.hdca;
  for (int i = 1; i < model.nbodies; ++i)
    for (int c = 0; c < model.nv_joint[i]; ++c) {
      const auto s = h.motion[i].col(c);
      out[model.idx_v[i] + c] =
          s.dot(subtree_impulse_rate[i]) + columnRateDot(model, h, i, c, subtree_impulse[i]);
    }
}

void hdcaMomentumRates(const Model& model, Data& data, const Eigen::VectorXd& q,
                       const Eigen::VectorXd& p, const Eigen::VectorXd& tau, Eigen::VectorXd& v,
                       Eigen::VectorXd& p_dot) {
  hdcaAssemble(model, data, q);
  // the refinement's last residual sweep was at this v (and gave ṗ) unless it ran out of steps
  const MomentumRates rates{q, tau, p_dot};
  if (!solveRefined<true>(model, data, p, v, &rates)) {
    subtreeMomenta(model, data, v);
    momentumRatesFromSweep(model, data, v, rates);
  }
}

void hdcaMomenta(const Model& model, Data& data, const Eigen::VectorXd& q,
                 const Eigen::VectorXd& v, Eigen::VectorXd& p) {
  forwardKinematics(model, data, q, v);
  // h = Σ I V over each subtree, tips first; p = Hᵀ h + armature v
  for (int i = 1; i < model.nbodies; ++i)
    data.f_W[i] = model.inertias[i].transformed(data.X_WB[i]) * data.V_W[i];
  for (int i = model.nbodies - 1; i >= 1; --i) {
    const int iv = model.idx_v[i], nv = model.nv_joint[i];
    p.segment(iv, nv).noalias() = data.S_W.middleCols(iv, nv).transpose() * data.f_W[i];
    p.segment(iv, nv) += model.armature.segment(iv, nv).cwiseProduct(v.segment(iv, nv));
    if (model.parent[i] > 0) data.f_W[model.parent[i]] += data.f_W[i];
  }
}

const Eigen::VectorXd& hdcaForwardDynamics(const Model& model, Data& data,
                                           const Eigen::VectorXd& q, const Eigen::VectorXd& v,
                                           const Eigen::VectorXd& tau) {
  // τ − C v − g − d v − k (q − q_ref) is M q̈: phase 1 turns it into q̈ as it turns p into v
  const Eigen::VectorXd& bias = nonLinearEffects(model, data, q, v);
  data.hdca.rhs = tau - bias;
  hdcaAssembleAtKinematics(model, data);
  hdcaVelocities(model, data, data.hdca.rhs, data.qdd);
  return data.qdd;
}

void hdcaInverseInertia(const Model& model, Data& data, Eigen::Ref<Eigen::MatrixXd> X) {
  for (int c = 0; c < X.cols(); ++c) hdcaVelocities(model, data, X.col(c), X.col(c));
}

}  // namespace hilsim
