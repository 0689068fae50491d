// Run by ember-run on 1, 2 and 4 ranks (ctest): every collective of a ProcessGroup against the
// value each rank computes on its own from the others' known inputs. Exits 1 on a mismatch.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "ember/distributed/process_group.h"

using namespace ember;

namespace {
int failures = 0;
int rank_ = 0;
void expect(bool ok, const std::string& what) {
  if (ok) return;
  if (failures < 10) std::fprintf(stderr, "rank %d: %s\n", rank_, what.c_str());
  ++failures;
}
// Rank r's i-th input.
double input(int r, size_t i) { return double((r + 1) * int(i % 97)) - 0.25 * double(r); }
}  // namespace

int main() {
  try {
    auto pg = dist::ProcessGroup::from_env();
    int w = pg.world_size();
    rank_ = pg.rank();
    // 300001 floats: several of Gloo's 1 MiB segments and a short last one.
    size_t n = 300001;
    for (dist::Reduce op :
         {dist::Reduce::Sum, dist::Reduce::Mean, dist::Reduce::Max, dist::Reduce::Min}) {
      std::vector<float> a(n);
      for (size_t i = 0; i < n; ++i) a[i] = float(input(rank_, i));
      pg.all_reduce(a.data(), n, op);
      for (size_t i = 0; i < n; i += 7) {
        double want = op == dist::Reduce::Max ? -1e300 : op == dist::Reduce::Min ? 1e300 : 0;
        for (int r = 0; r < w; ++r) {
          double v = float(input(r, i));
          want = op == dist::Reduce::Max   ? std::max(want, v)
                 : op == dist::Reduce::Min ? std::min(want, v)
                                           : want + v;
        }
        if (op == dist::Reduce::Mean) want /= w;
        expect(std::abs(a[i] - want) <= 1e-5 * (1 + std::abs(want)),
               "all_reduce op " + std::to_string(int(op)) + " at " + std::to_string(i) + ": " +
                   std::to_string(a[i]) + " vs " + std::to_string(want));
      }
    }
    // Integers and doubles through TensorData.
    TensorData ti = TensorData::from<int64_t>({int64_t(rank_), int64_t(10 * rank_ + 1)}, {2});
    TensorData ri = pg.all_reduce(ti);
    auto si = ri.as<int64_t>();
    expect(si[0] == int64_t(w) * (w - 1) / 2 && si[1] == 10 * int64_t(w) * (w - 1) / 2 + w,
           "all_reduce i64");
    TensorData td = TensorData::from<double>({0.5 * rank_}, {1});
    expect(std::abs(pg.all_reduce(td, dist::Reduce::Max).as<double>()[0] - 0.5 * (w - 1)) < 1e-12,
           "all_reduce f64 max");
    // Broadcast from the last rank: its shape and dtype too.
    int root = w - 1;
    TensorData mine = rank_ == root ? TensorData::from<float>({1.5f, 2.5f, float(root)}, {3, 1})
                                    : TensorData::from<int32_t>({7}, {1});
    TensorData got = pg.broadcast(mine, root);
    expect(got.dtype() == DType::F32 && got.shape() == Shape{3, 1} &&
               got.as<float>()[2] == float(root),
           "broadcast from rank " + std::to_string(root));
    // All-gather: rank order.
    TensorData g = pg.all_gather(TensorData::from<float>({float(rank_), float(rank_) + 0.5f}, {2}));
    expect(g.shape() == Shape{int64_t(w), 2}, "all_gather shape " + g.shape().to_string());
    for (int r = 0; r < w; ++r)
      expect(g.as<float>()[2 * r] == float(r) && g.as<float>()[2 * r + 1] == float(r) + 0.5f,
             "all_gather row " + std::to_string(r));
    // Reduce-scatter: rows [rank * 2, rank * 2 + 2) of the sum.
    std::vector<float> rs(size_t(2 * w) * 3);
    for (size_t i = 0; i < rs.size(); ++i) rs[i] = float(input(rank_, i));
    TensorData part = pg.reduce_scatter(TensorData::from<float>(rs, {2 * int64_t(w), 3}));
    expect(part.shape() == Shape{2, 3}, "reduce_scatter shape " + part.shape().to_string());
    for (size_t j = 0; j < 6; ++j) {
      double want = 0;
      for (int r = 0; r < w; ++r) want += float(input(r, size_t(rank_) * 6 + j));
      expect(std::abs(part.as<float>()[j] - want) < 1e-4, "reduce_scatter at " + std::to_string(j));
    }
    // Bad inputs are errors, not hangs: a dtype that is not reduced.
    try {
      pg.all_reduce(TensorData::from<uint8_t>({1}, {1}));
      expect(false, "all_reduce of u8 did not throw");
    } catch (const DTypeError&) {
    }
    pg.barrier();
    std::printf("rank %d of %d: %s\n", rank_, w, failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank_, e.what());
    return 1;
  }
}
