#include "engine/model/assembly_tree.h"

#include <algorithm>
#include <cassert>
#include <random>

#include "engine/model/model.h"

namespace hilsim {

namespace {

// Builds the binary tree of a path's blocks [begin, end), whose first bodies are `firsts`, into
// tree.nodes; returns its root node
int buildRange(AssemblyTree& tree, const std::vector<int>& firsts, int begin, int end,
               AssemblyOrder order, std::mt19937_64& random) {
  if (end - begin == 1) return tree.leaf[firsts[begin]];
  int split = begin + (end - begin) / 2;  // balanced: the right half starts here
  if (order == AssemblyOrder::kSequential) split = end - 1;
  if (order == AssemblyOrder::kRandom)
    split = std::uniform_int_distribution<int>(begin + 1, end - 1)(random);
  const int left = buildRange(tree, firsts, begin, split, order, random);
  const int right = buildRange(tree, firsts, split, end, order, random);
  AssemblyTree::Node node;
  node.left = left;
  node.right = right;
  node.joint = firsts[split];
  node.first = firsts[begin];
  tree.nodes.push_back(node);
  return static_cast<int>(tree.nodes.size()) - 1;
}

// Nodes grouped by level into (order, begin)
void groupByLevel(const std::vector<int>& level, std::vector<int>& order, std::vector<int>& begin) {
  const int levels = level.empty() ? 0 : *std::max_element(level.begin(), level.end()) + 1;
  begin.assign(levels + 1, 0);
  for (int l : level) ++begin[l + 1];
  for (int l = 0; l < levels; ++l) begin[l + 1] += begin[l];
  order.assign(level.size(), -1);
  std::vector<int> next(begin.begin(), begin.end() - 1);
  for (int node = 0; node < static_cast<int>(level.size()); ++node)
    order[next[level[node]]++] = node;  // ascending node index within a level: deterministic
}

}  // namespace

AssemblyTree buildAssemblyTree(const Model& model, AssemblyOrder order, std::uint64_t seed,
                               int block_bodies) {
  assert(block_bodies >= 1);
  const int nb = model.nbodies;
  AssemblyTree tree;
  std::mt19937_64 random(seed);

  // subtree sizes, then each body's heavy child (the largest subtree, the first on a tie)
  std::vector<int> size(nb, 1);
  for (int i = nb - 1; i >= 1; --i)
    if (model.parent[i] > 0) size[model.parent[i]] += size[i];
  tree.heavy_child.assign(nb, -1);
  for (int i = 1; i < nb; ++i) {
    const int p = model.parent[i];
    if (p <= 0) continue;
    int& heavy = tree.heavy_child[p];
    if (heavy < 0 || size[i] > size[heavy]) heavy = i;
  }
  // light children: the others (and the world's children, the roots of its trees)
  tree.light_begin.assign(nb + 1, 0);
  for (int i = 1; i < nb; ++i) {
    const int p = std::max(model.parent[i], 0);
    if (tree.heavy_child[p] != i || p == 0) ++tree.light_begin[p + 1];
  }
  for (int i = 0; i < nb; ++i) tree.light_begin[i + 1] += tree.light_begin[i];
  tree.light.assign(tree.light_begin[nb], -1);
  {
    std::vector<int> next(tree.light_begin.begin(), tree.light_begin.end() - 1);
    for (int i = 1; i < nb; ++i) {
      const int p = std::max(model.parent[i], 0);
      if (tree.heavy_child[p] != i || p == 0) tree.light[next[p]++] = i;
    }
  }
  tree.heavy_child[0] = -1;

  // each path cut into blocks, a leaf each, then the path's tree over its blocks
  tree.leaf.assign(nb, -1);
  tree.path_root.assign(nb, -1);
  std::vector<int> bodies, firsts;
  for (int top = 1; top < nb; ++top) {
    const int p = std::max(model.parent[top], 0);
    if (p != 0 && tree.heavy_child[p] == top) continue;  // not a path's top
    bodies.clear();
    for (int b = top; b >= 0; b = tree.heavy_child[b]) bodies.push_back(b);
    const int length = static_cast<int>(bodies.size());
    const int blocks = (length + block_bodies - 1) / block_bodies;
    firsts.clear();
    for (int k = 0; k < blocks; ++k) {
      // block k holds bodies [k L / blocks, (k + 1) L / blocks): lengths differ by one at most
      const int begin = k * length / blocks, end = (k + 1) * length / blocks;
      AssemblyTree::Node node;
      node.body = node.first = bodies[begin];
      node.count = end - begin;
      node.block = static_cast<int>(tree.block_body.size());
      for (int b = begin; b < end; ++b) {
        tree.leaf[bodies[b]] = static_cast<int>(tree.nodes.size());
        tree.block_body.push_back(bodies[b]);
      }
      tree.nodes.push_back(node);
      firsts.push_back(bodies[begin]);
    }
    tree.path_root[top] = buildRange(tree, firsts, 0, blocks, order, random);
  }
  const int nn = static_cast<int>(tree.nodes.size());
  tree.path_top.assign(nn, -1);
  for (int top = 1; top < nb; ++top) {
    if (tree.path_root[top] < 0) continue;
    // every node under the path's root
    std::vector<int> stack{tree.path_root[top]};
    while (!stack.empty()) {
      const int n = stack.back();
      stack.pop_back();
      tree.path_top[n] = top;
      if (tree.nodes[n].left >= 0) {
        stack.push_back(tree.nodes[n].left);
        stack.push_back(tree.nodes[n].right);
      }
    }
  }

  // assembly levels: paths in decreasing order of their top body (a light path's top is above
  // every body of the path it hangs off), leaves before the compounds built on them
  std::vector<int> up_level(nn, 0);
  const auto upLevel = [&](auto&& self, int n) -> int {
    const AssemblyTree::Node& node = tree.nodes[n];
    int level = 0;
    if (node.left >= 0) {
      level = std::max(self(self, node.left), self(self, node.right)) + 1;
    } else {
      tree.forEachBlockBody(node, [&](int b) {
        for (int k = tree.light_begin[b]; k < tree.light_begin[b + 1]; ++k)
          level = std::max(level, up_level[tree.path_root[tree.light[k]]] + 1);
      });
    }
    return up_level[n] = level;
  };
  for (int top = nb - 1; top >= 1; --top)
    if (tree.path_root[top] >= 0) upLevel(upLevel, tree.path_root[top]);

  // disassembly levels: paths in increasing order of their top, each root after the leaf of the
  // body it hangs off (the world's paths first)
  std::vector<int> down_level(nn, 0);
  const auto downLevel = [&](auto&& self, int n, int level) -> void {
    down_level[n] = level;
    const AssemblyTree::Node& node = tree.nodes[n];
    if (node.left < 0) return;
    self(self, node.left, level + 1);
    self(self, node.right, level + 1);
  };
  for (int top = 1; top < nb; ++top) {
    if (tree.path_root[top] < 0) continue;
    const int p = std::max(model.parent[top], 0);
    downLevel(downLevel, tree.path_root[top], p == 0 ? 0 : down_level[tree.leaf[p]] + 1);
  }

  // consumers and the post-order (the world's paths in order of their top body), in which the
  // nodes are then numbered
  tree.consumer.assign(nn, -1);
  for (int n = 0; n < nn; ++n) {
    const AssemblyTree::Node& node = tree.nodes[n];
    if (node.left >= 0) tree.consumer[node.left] = tree.consumer[node.right] = n;
  }
  for (int top = 1; top < nb; ++top)
    if (tree.path_root[top] >= 0 && model.parent[top] > 0)
      tree.consumer[tree.path_root[top]] = tree.leaf[model.parent[top]];
  std::vector<int> post;
  post.reserve(nn);
  tree.subtree_begin.assign(nn, 0);
  const auto postOrder = [&](auto&& self, int n) -> void {
    const int begin = static_cast<int>(post.size());
    const AssemblyTree::Node& node = tree.nodes[n];
    if (node.left >= 0) {
      self(self, node.left);
      self(self, node.right);
    } else {
      tree.forEachBlockBody(node, [&](int b) {
        for (int k = tree.light_begin[b]; k < tree.light_begin[b + 1]; ++k)
          self(self, tree.path_root[tree.light[k]]);
      });
    }
    tree.subtree_begin[post.size()] = begin;
    post.push_back(n);
  };
  for (int k = tree.light_begin[0]; k < tree.light_begin[1]; ++k)
    postOrder(postOrder, tree.path_root[tree.light[k]]);
  // node post[k] becomes node k: the node data a thread's range touches is contiguous in memory
  // (no arithmetic depends on the numbering)
  {
    std::vector<int> id(nn);
    for (int k = 0; k < nn; ++k) id[post[k]] = k;
    const auto remap = [&](int n) { return n < 0 ? n : id[n]; };
    std::vector<AssemblyTree::Node> nodes(nn);
    std::vector<int> path_top(nn), consumer(nn), level_up(nn), level_down(nn);
    for (int n = 0; n < nn; ++n) {
      AssemblyTree::Node node = tree.nodes[n];
      node.left = remap(node.left);
      node.right = remap(node.right);
      nodes[id[n]] = node;
      path_top[id[n]] = tree.path_top[n];
      consumer[id[n]] = remap(tree.consumer[n]);
      level_up[id[n]] = up_level[n];
      level_down[id[n]] = down_level[n];
    }
    tree.nodes = std::move(nodes);
    tree.path_top = std::move(path_top);
    tree.consumer = std::move(consumer);
    for (int& n : tree.leaf) n = remap(n);
    for (int& n : tree.path_root) n = remap(n);
    groupByLevel(level_up, tree.up, tree.up_begin);
    groupByLevel(level_down, tree.down, tree.down_begin);
  }
  // relative costs, in a block body's work (its articulated recursion): a compound (a joint's
  // impulse factor and three 6 × 6 updates) about three, a block's own mobility one more
  tree.post_weight.assign(nn + 1, 0.0);
  for (int k = 0; k < nn; ++k) {
    const AssemblyTree::Node& node = tree.nodes[k];
    tree.post_weight[k + 1] = tree.post_weight[k] + (node.left >= 0 ? 3.0 : node.count + 1.0);
    if (node.left >= 0) tree.has_compounds = true;
  }
  return tree;
}

AssemblyTree defaultAssemblyTree(const Model& model) {
  AssemblyTree blocks = buildAssemblyTree(model);
  if (blocks.post_weight.back() >= kMinSharedWeight) return blocks;
  return buildAssemblyTree(model, AssemblyOrder::kBalanced, 0, std::max(1, model.nbodies));
}

}  // namespace hilsim
