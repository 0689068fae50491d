#include "ember/autodiff/autodiff.h"

namespace ember::autodiff {

namespace {
thread_local bool t_grad_enabled = true;
thread_local Checkpointing t_checkpointing = Checkpointing::None;
std::atomic<uint64_t> g_next_id{1};
}  // namespace

std::atomic<int64_t> detail::g_live_nodes{0};
uint64_t detail::next_node_id() { return g_next_id.fetch_add(1, std::memory_order_relaxed); }

NoGradGuard::NoGradGuard() : prev_(t_grad_enabled) { t_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { t_grad_enabled = prev_; }
CheckpointScope::CheckpointScope(Checkpointing s) : prev_(t_checkpointing) { t_checkpointing = s; }
CheckpointScope::~CheckpointScope() { t_checkpointing = prev_; }
bool grad_enabled() { return t_grad_enabled; }
Checkpointing checkpointing() { return t_checkpointing; }
int64_t live_nodes() { return detail::g_live_nodes.load(); }

}  // namespace ember::autodiff
