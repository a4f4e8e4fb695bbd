// The binary assembly tree of a model's spanning tree: the order in which the Hamiltonian
// divide-and-conquer formulation (seed 001, engine/algorithms/hdca.h) joins bodies into compound
// bodies and takes them apart again. Fixed per model; docs/HDCA.md, "Assembly tree".
//
// The tree is cut into heavy paths (each body continues the path of its parent when it has the
// largest subtree among its siblings). Each path is cut into blocks of at most `block_bodies`
// consecutive bodies, the leaves, each assembled in sequence, body after body (an articulated
// recursion inside the block); the blocks of a path are assembled as the paper assembles a chain:
// a binary tree over them, two-handle compounds joined at one joint. A path hanging off a body (a
// light child) has a free tip, so once assembled it is a one-handle compound: it is absorbed
// into that body before the body's block is assembled. Paths nest at most log₂ n deep, so with
// balanced chain trees an assembly has O(log² n) levels; a block adds its length to the span.
#pragma once

#include <cstdint>
#include <vector>

namespace hilsim {

struct Model;

/// How each path's chain of bodies is split into a binary tree. Every order gives the same result
/// up to round-off (seed 001 §3.2); the balanced one has the fewest levels.
enum class AssemblyOrder {
  kBalanced,    ///< halves: log₂ L levels for a path of L bodies
  kSequential,  ///< the first body, then each next one joined on: L − 1 levels
  kRandom,      ///< split points drawn from a seeded generator (tests)
};

/// Bodies per leaf block by default: a block's sequential recursion costs about a third of a
/// compound per body, so 16 bodies make the compounds a small share of the work, and a
/// 1024-body chain still has 64 blocks to share among threads (docs/HDCA.md, "Blocks").
constexpr int kDefaultBlockBodies = 16;

/// Below this much work (AssemblyTree::post_weight: about 512 bodies of a chain) hdca runs every
/// pass on the calling thread alone: on two threads here a 512-body chain or tree breaks even
/// (docs/HDCA.md, "Threads").
constexpr double kMinSharedWeight = 630.0;

struct AssemblyTree {
  struct Node {
    int left = -1, right = -1;  ///< child nodes; −1 for a leaf
    /// A leaf's block: `count` consecutive bodies of a path from `body` down (each the heavy
    /// child of the one before); −1 and 0 for a compound
    int body = -1, count = 0;
    int block = -1;  ///< a leaf's bodies: block_body[block] … block_body[block + count − 1]
    /// A compound's joint: the joint of the first body of `right`, whose parent is the last body
    /// of `left`. −1 for a leaf.
    int joint = -1;
    int first = -1;  ///< the first (inboardmost) body of the node's range of its path
  };
  std::vector<Node> nodes;
  std::vector<int> leaf;         ///< [nbodies] the leaf (block) holding body i (−1 for the world)
  std::vector<int> path_root;    ///< [nbodies] the root node of the path body i starts; else −1
  std::vector<int> path_top;     ///< [nodes] the top body of the path a node belongs to
  std::vector<int> heavy_child;  ///< [nbodies] the child continuing body i's path; −1 at its end
  /// Light children of body i (those that start paths of their own): light[light_begin[i]] …
  /// light[light_begin[i + 1] − 1], ascending. The world's are the roots of the model's trees.
  std::vector<int> light_begin, light;
  /// Nodes by assembly level (up[up_begin[l]] … up[up_begin[l + 1] − 1]): a node's level is after
  /// those of its children and, for a leaf, of the paths hanging off its body.
  std::vector<int> up, up_begin;
  /// Nodes by disassembly level: a node after its parent and, for a path's root, after the leaf
  /// of the body the path hangs off.
  std::vector<int> down, down_begin;

  /// [nodes] the node that reads a node's result on the way up and writes what it reads on the
  /// way down: a compound's parent; for a path's root, the leaf of the body the path hangs off;
  /// −1 for the roots of the world's paths.
  std::vector<int> consumer;
  // The nodes are numbered in a post-order: each after the nodes it consumes (a compound after
  // its children, a leaf after the roots of the paths hanging off its body), so that every
  // subtree is a contiguous range of numbers ending at its root.
  /// The running sum of the nodes' relative costs in that order (post_weight[k]: of nodes
  /// 0 … k − 1; nodes + 1 entries). Threads take contiguous ranges of equal cost.
  std::vector<double> post_weight;
  /// [nodes] the first node of node k's subtree (its nodes: subtree_begin[k] … k): a thread's
  /// range [a, b) finishes the nodes whose subtree lies inside it first
  std::vector<int> subtree_begin;

  /// The bodies of the leaves, each leaf's in the order of its path (Node::block)
  std::vector<int> block_body;
  /// Whether some path has more than one block (a compound joins two): else every path is one
  /// block, joined to its parent body as aba's bodies are
  bool has_compounds = false;
  /// Calls f(body) for each body of leaf `node`, from its first down its path
  template <typename F>
  void forEachBlockBody(const Node& node, F&& f) const {
    for (int k = 0; k < node.count; ++k) f(block_body[node.block + k]);
  }

  int upLevels() const { return static_cast<int>(up_begin.size()) - 1; }
  int downLevels() const { return static_cast<int>(down_begin.size()) - 1; }
};

/// The assembly tree of `model`'s spanning tree. `seed` for AssemblyOrder::kRandom; a path of L
/// bodies becomes ⌈L / block_bodies⌉ blocks of as equal lengths as can be (block_bodies ≥ 1).
AssemblyTree buildAssemblyTree(const Model& model, AssemblyOrder order = AssemblyOrder::kBalanced,
                               std::uint64_t seed = 0, int block_bodies = kDefaultBlockBodies);

/// The tree a model's Data starts with: blocks of kDefaultBlockBodies where there is enough work
/// to share among threads (post_weight ≥ kMinSharedWeight); below, every path one block — its
/// passes run on one thread whatever the thread count, and one block per path is the least work
/// (no compounds; docs/HDCA.md, "Blocks").
AssemblyTree defaultAssemblyTree(const Model& model);

}  // namespace hilsim
