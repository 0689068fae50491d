// Fusion<B>: a backend decorator that records elementwise ops instead of running them, and
// runs each recorded chain as one program when something needs its values: a read
// (to_data), an op it does not record (matmul, ...) that takes one of them, an op of another
// shape, or the step bound. Values nobody holds any more at that point are never written, so
// `gelu(a * b + c).exp() * 0.5 + a` reads a, b and c once and writes one tensor. A sum, max or
// min of a recorded value ends the program where the backend can fuse it (CUDA): the chain is
// computed as the reduction reads it, so `(x * y).sum(1)` writes only the sums. A backend that can
// compile programs (`fusion::FusedBackend`: CUDA) runs each as one generated kernel, cached by the
// program's signature; on others (the CPU) the program's ops run one by one, in order, so results
// are the same with fusion on and off.
//
//   using B = ember::Fusion<ember::Cpu>;        // Dispatch uses Fusion<Cuda> for cuda:N
//   auto x = ember::Tensor<B, 1>::ones({1 << 20});
//   auto y = ((x * 2.0).exp() + x).tanh();      // recorded: nothing runs yet
//   auto d = y.to_data();                       // one program (on CUDA one kernel), x read once
//   using AB = ember::Autodiff<B>;              // backward passes are fused too
//
// Switches and counters: ember/fusion/settings.h; docs/fusion.md.
#pragma once
#include <algorithm>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ember/backend/apply.h"
#include "ember/backend/device_memory.h"
#include "ember/core/error.h"
#include "ember/fusion/backend.h"
#include "ember/fusion/program.h"
#include "ember/fusion/replay.h"
#include "ember/fusion/settings.h"
#include "ember/fusion/stream.h"
#include "ember/ops/decompose.h"

namespace ember {

template <Backend B>
class Fusion {
  using H = typename B::Handle;
  using Lazy = fusion::detail::LazyTensor<H>;
  using Stream = fusion::detail::Stream<H>;
  using Ref = fusion::Ref;

 public:
  using Decorated = B;
  using Handle = std::shared_ptr<Lazy>;

  static std::string_view name() { return "fusion"; }
  static Device default_device() { return B::default_device(); }
  static const TensorMeta& meta(const Handle& h) { return h->meta; }
  static Device device(const Handle& h) { return h->device; }
  static Handle from_data(const TensorData& d, Device dev) {
    return wrap(B::from_data(d, dev), dev);
  }
  static TensorData to_data(const Handle& h) { return B::to_data(value(h)); }
  /// The composites B runs natively, and gelu and silu (one step of a program).
  static bool supports(OpCode c) { return B::supports(c) || fusion::elementwise_composite(c); }

  static Handle run(const Op& op, std::span<Handle> in, const TensorMeta& out, Device dev) {
    if (fusion::enabled() && in.size() == 1 && fusion::reduction_fusible(op, in[0]->meta))
      if (Handle h = record_reduction(op, in, out, dev)) return h;
    if (op.code == OpCode::Reshape && in.size() == 1 && fusion::enabled())
      if (Handle h = record_view(op, in[0], out, dev)) return h;
    if constexpr (fusion::EpilogueBackend<B>)
      if (op.code == OpCode::Matmul && in.size() == 2 && fusion::enabled() && fusion::epilogues())
        if (Handle h = record_product(op, in, out, dev)) return h;
    if (fusion::enabled() && fusion::records(op, in.empty() ? nullptr : &in[0]->meta, out) &&
        fusible(op, in, out))
      return record(op, in, out, dev);
    detail::HandleBuffer<H> inner(in.size());
    for (size_t i = 0; i < in.size(); ++i) inner[i] = take(in[i]);
    return wrap(run_validated<B>(op, inner.span(), out, dev), dev);
  }

  /// Runs what the device's stream holds (queued on B, not waited for).
  static void flush(Device dev) {
    {
      Stream& s = stream(dev);
      std::lock_guard lk(s.mu);
      flush_locked(s, dev);
    }
    if constexpr (requires { B::flush(dev); }) B::flush(dev);  // B's own queue, if it has one
  }

  /// B's device memory of `h` (backend/device_memory.h), its program run first if pending.
  static void with_device_memory(const Handle& h,
                                 const DeviceMemoryFn& f) requires HasDeviceMemory<B> {
    B::with_device_memory(value(h), f);
  }

  /// The value of `h` on B, running its program first if it is pending.
  static const H& value(const Handle& h) {
    // Under the stream's lock: another thread's flush may be giving h its value.
    Stream& s = stream(h->device);
    std::lock_guard lk(s.mu);
    if (h->value) return *h->value;
    if (h->error) fusion::detail::throw_failed(*h->error);
    // Other programs of the flush may fail: their errors stay on their own tensors; h's read
    // reports only h's (as it was thrown, when it was the flush's first failure).
    std::exception_ptr failed;
    try {
      flush_locked(s, h->device);
    } catch (...) {
      failed = std::current_exception();
    }
    if (h->value) return *h->value;
    if (failed && h->error) {
      std::string what;
      try {
        std::rethrow_exception(failed);
      } catch (const std::exception& e) {
        what = e.what();
      } catch (...) {
      }
      if (!what.empty() && h->error->find(what) != std::string::npos)
        std::rethrow_exception(failed);
    }
    if (h->error) fusion::detail::throw_failed(*h->error);
    if (failed) std::rethrow_exception(failed);
    fusion::detail::throw_failed("a pending tensor was not produced");
  }

 private:
  static Handle wrap(H h, Device dev) {
    auto t = std::make_shared<Lazy>(B::meta(h), dev);
    t->value = std::move(h);
    return t;
  }

  // The inner handle of an input; moved out when `h` is its only holder, so B may reuse it.
  static H take(Handle& h) {
    value(h);
    if (h.use_count() == 1) return std::move(*h->value);
    return *h->value;
  }

  static bool fusible(const Op& op, std::span<Handle> in, const TensorMeta& out) {
    if constexpr (fusion::FusedBackend<B>) {
      SmallVec<const TensorMeta*, 4> metas;
      for (auto& h : in) metas.push_back(&h->meta);
      return B::can_fuse(op, std::span<const TensorMeta* const>(metas.data(), metas.size()), out);
    } else {
      (void)op, (void)in, (void)out;
      return true;
    }
  }

  static Stream& stream(Device dev) {
    // Never destroyed: ops still recorded at exit must not outlive the backend's own state.
    static Stream* streams = new Stream[kMaxDevices];
    if (dev.index < 0 || dev.index >= kMaxDevices)
      throw DeviceError("[fusion] device index out of range: " + dev.to_string());
    return streams[dev.index];
  }
  static constexpr int kMaxDevices = 64;

  static bool pending_here(const Stream& s, const Lazy& t) {
    return !t.value && !t.error && t.generation == s.generation && t.step >= 0;
  }

  // Ends the stream's program with `op` (a sum, max or min) of its pending value in[0], when
  // the backend can fuse it; nullptr: the op runs at once.
  static Handle record_reduction(const Op& op, std::span<Handle> in, const TensorMeta& out,
                                 Device dev) {
    Stream& s = stream(dev);
    std::lock_guard lk(s.mu);
    const Lazy& x = *in[0];
    // A second reduction of the program (of the same value, say) runs at once.
    if (s.reduction || !s.has_shape || !pending_here(s, x) || x.meta.shape != s.shape ||
        s.entries[size_t(x.step)].code == OpCode::Full || !fusible(op, in, out))
      return nullptr;
    auto t = std::make_shared<Lazy>(out, dev);
    t->generation = s.generation;
    s.reduction = typename Stream::PendingReduction{op, x.step, out, t};
    fusion::detail::count(fusion::detail::Counter::Recorded);
    return t;
  }

  static Handle record(const Op& op, std::span<Handle> in, const TensorMeta& out, Device dev) {
    Stream& s = stream(dev);
    std::lock_guard lk(s.mu);
    // A program ends with its reduction: what follows (its result's users too) starts another.
    if (s.reduction) close_locked(s, dev);
    bool constant = op.code == OpCode::Full;
    // Bounds are checked before an op joins, so the value it continues from is the last
    // step of the program that ends (its only extra output), never a value in the middle.
    if (!constant &&
        ((s.has_shape && s.shape != out.shape) || s.entries.size() >= size_t(fusion::max_steps())))
      close_locked(s, dev);
    int fresh = 0;
    for (auto& h : in)
      if (!pending_here(s, *h) && find_input(s, h) < 0) ++fresh;
    if (s.inputs.size() + fresh > size_t(fusion::kMaxInputs)) close_locked(s, dev);

    if (s.entries.empty()) s.entries.reserve(size_t(fusion::max_steps()) + 8);
    typename Stream::Entry e;
    e.code = op.code;
    if (constant) e.value = op.attrs.scalar;
    e.meta = out;
    e.arity = static_cast<int>(in.size());
    for (const Handle& h : in)  // before any operand joins the stream's inputs
      if (h->error) fusion::detail::throw_failed(*h->error);
    for (size_t i = 0; i < in.size(); ++i) {
      Handle& h = in[i];
      e.args[i] = pending_here(s, *h) ? h->step : input_ref(s, h);
    }
    auto t = std::make_shared<Lazy>(out, dev);
    t->step = static_cast<int32_t>(s.entries.size());
    t->generation = s.generation;
    e.owner = t;
    s.entries.push_back(std::move(e));
    if (!constant && !s.has_shape) {
      s.shape = out.shape;
      s.has_shape = true;
    }
    fusion::detail::count(fusion::detail::Counter::Recorded);
    return t;
  }

  // A reshape of a value a recorded program makes runs after it, so that reshaping a result
  // (sum() does) does not run its program while the operands' temporaries are still held.
  static Handle record_view(const Op& op, const Handle& x, const TensorMeta& out, Device dev) {
    Stream& s = stream(dev);
    std::lock_guard lk(s.mu);
    if (x->value || x->error || x->device != dev) return nullptr;
    // A source of the current program: that program runs first (closed, a constant source
    // not carried away). A source of an older one: the current program goes on recording and
    // runs after the view anyway.
    if (x->generation == s.generation) close_locked(s, dev, false);  // a step or the reduction
    auto t = std::make_shared<Lazy>(out, dev);  // no step: never pending in a program
    typename Stream::Segment c;
    c.view = typename Stream::View{op, x, t};
    s.closed.push_back(std::move(c));
    fusion::detail::count(fusion::detail::Counter::Recorded);
    if (s.closed.size() >= kMaxClosed) run_closed_quietly(s, dev);
    return t;
  }

  // A matmul waits in the stream as a segment of its own: the program recorded after it may
  // take it as its GEMM's epilogue (execute). Its product is never pending in a program.
  static Handle record_product(const Op& op, std::span<Handle> in, const TensorMeta& out,
                               Device dev) {
    Stream& s = stream(dev);
    std::lock_guard lk(s.mu);
    for (const Handle& h : in) {
      if (h->device != dev) return nullptr;
      if (h->error) fusion::detail::throw_failed(*h->error);
    }
    // An operand the program being recorded makes: that program runs first.
    for (const Handle& h : in)
      if (!h->value && h->generation == s.generation) {
        close_locked(s, dev, false);
        break;
      }
    auto t = std::make_shared<Lazy>(out, dev);  // generation 0: of no program
    typename Stream::Segment c;
    c.product = typename Stream::Product{op, {in[0], in[1]}, t};
    s.closed.push_back(std::move(c));
    fusion::detail::count(fusion::detail::Counter::Recorded);
    fusion::detail::count(fusion::detail::Counter::MatmulsDeferred);
    if (s.closed.size() >= kMaxClosed) run_closed_quietly(s, dev);
    return t;
  }

  // The index of `h` among the stream's inputs, or -1.
  static int find_input(const Stream& s, const Handle& h) {
    for (size_t k = 0; k < s.inputs.size(); ++k)
      if (s.inputs[k] == h) return static_cast<int>(k);
    return -1;
  }
  static Ref input_ref(Stream& s, const Handle& h) {
    int k = find_input(s, h);
    if (k < 0) {
      // A value, or the value of a closed program, which runs before this one (a failed one
      // has thrown already).
      k = static_cast<int>(s.inputs.size());
      s.inputs.push_back(h);
    }
    return fusion::Program::input(k);
  }

  // Moves the program being recorded (not empty) to the closed ones; a fresh one starts.
  static typename Stream::Segment& take_current(Stream& s) {
    typename Stream::Segment c;
    c.generation = s.generation;
    c.has_shape = s.has_shape;
    c.shape = s.shape;
    c.entries = std::move(s.entries);
    c.inputs = std::move(s.inputs);
    c.reduction = std::move(s.reduction);
    s.entries.clear();
    s.inputs.clear();
    s.reduction.reset();
    s.has_shape = false;
    ++s.generation;
    fusion::detail::count(fusion::detail::Counter::Flushes);
    s.closed.push_back(std::move(c));
    return s.closed.back();
  }

  // Closes the program being recorded: it runs at the next flush, after the ones closed
  // before it. With `carry`, held constants of another shape (the scalar operand of the op
  // that closes it, typically) move to the next program instead of running on their own.
  static void close_locked(Stream& s, Device dev, bool carry = true) {
    if (s.entries.empty()) {
      s.inputs.clear();
      s.has_shape = false;
      return;
    }
    typename Stream::Segment& c = take_current(s);
    for (auto& e : c.entries) {
      if (!carry) break;
      if (e.code != OpCode::Full || (c.has_shape && e.meta.shape == c.shape)) continue;
      Handle t = e.owner.lock();
      if (!t || t->value || t->error || t->generation != c.generation) continue;
      t->step = static_cast<int32_t>(s.entries.size());
      t->generation = s.generation;
      s.entries.push_back(e);  // the closed program keeps its copy for its own steps
    }
    if (s.closed.size() >= kMaxClosed) run_closed_quietly(s, dev);
  }
  static constexpr size_t kMaxClosed = 64;

  // Runs the recorded programs in order and gives their owners values (every held value gets
  // one: constants of another shape run on their own, not carried).
  static void flush_locked(Stream& s, Device dev) {
    if (!s.entries.empty()) take_current(s);
    s.inputs.clear();
    s.has_shape = false;
    if (!s.closed.empty()) run_closed(s, dev);
  }

  // The closed programs, in order. A program that fails leaves its error on its tensors and on
  // those of later programs that read them; the others run; the first error is rethrown.
  static void run_closed(Stream& s, Device dev) {
    std::vector<typename Stream::Segment> closed = std::move(s.closed);
    s.closed.clear();
    std::exception_ptr first;
    auto guarded = [&](typename Stream::Segment& c, auto&& run) {
      try {
        run();
      } catch (const std::exception& e) {
        fail_segment(c, e.what());
        if (!first) first = std::current_exception();
      } catch (...) {
        fail_segment(c, "an unknown error");
        if (!first) first = std::current_exception();
      }
    };
    // A product waits for the segment after it, which may take it as its epilogue.
    typename Stream::Segment* waiting = nullptr;
    for (auto& c : closed) {
      typename Stream::Segment* product = std::exchange(waiting, nullptr);
      int at = product ? epilogue_input(c, *product) : -1;
      if (product && at < 0) guarded(*product, [&] { run_product(*product, dev); });
      if (c.product) {
        waiting = &c;
        continue;
      }
      guarded(c, [&] { execute(c, dev, at < 0 ? nullptr : product, at); });
    }
    if (waiting) guarded(*waiting, [&] { run_product(*waiting, dev); });
    if (first) std::rethrow_exception(first);
  }
  // The closed programs run while an unrelated op is recorded (the queue's bound): their
  // failures stay on their tensors, for their reads to report.
  static void run_closed_quietly(Stream& s, Device dev) {
    try {
      run_closed(s, dev);
    } catch (...) {
    }
  }
  // Every tensor a failed program should have made and did not gets the error, so no read
  // finds a tensor with neither.
  static void fail_segment(typename Stream::Segment& c, const std::string& why) {
    auto err = std::make_shared<const std::string>(why);
    auto mark = [&](const Handle& t) {
      if (t && !t->value && !t->error) t->error = err;
    };
    if (c.view) mark(c.view->owner.lock());
    if (c.product) mark(c.product->owner.lock());
    if (c.reduction) mark(c.reduction->owner.lock());
    for (auto& e : c.entries) {
      Handle t = e.owner.lock();
      if (t && t->generation == c.generation) mark(t);
    }
  }

  // The operands of a product, or nullopt after giving its owner their error.
  static std::optional<std::array<H, 2>> product_operands(typename Stream::Product& pr,
                                                          const Handle& t) {
    std::array<H, 2> ab;
    for (int i = 0; i < 2; ++i) {
      const Handle& x = pr.operands[size_t(i)];
      if (!x->value) {
        t->error =
            x->error ? x->error : std::make_shared<const std::string>("an input was not made");
        return std::nullopt;
      }
      ab[size_t(i)] = *x->value;
    }
    return ab;
  }

  // A deferred matmul on its own (nothing took it as an epilogue).
  static void run_product(typename Stream::Segment& c, Device dev) {
    typename Stream::Product& pr = *c.product;
    Handle t = pr.owner.lock();
    if (!t || t->value || t->error) return;  // nobody reads it
    std::optional<std::array<H, 2>> ab = product_operands(pr, t);
    pr.operands = {};
    if (!ab) return;
    try {
      t->value = run_validated<B>(pr.op, std::span<H>(ab->data(), 2), t->meta, dev);
    } catch (const std::exception& e) {
      t->error = std::make_shared<const std::string>(e.what());
      throw;
    }
  }

  // The input of program `c` that the deferred matmul `product` makes, when c is all that holds
  // it: c may take the matmul as its epilogue. -1 otherwise.
  static int epilogue_input(const typename Stream::Segment& c,
                            const typename Stream::Segment& product) {
    Handle t = product.product->owner.lock();
    if (!t || c.view || c.product) return -1;
    for (size_t k = 0; k < c.inputs.size(); ++k)
      if (c.inputs[k] == t) return t.use_count() == 2 ? static_cast<int>(k) : -1;
    return -1;
  }

  // Runs a closed segment; a program with `product` (its input `product_input`, see
  // epilogue_input) runs the matmul too, as its epilogue where the backend can.
  static void execute(typename Stream::Segment& c, Device dev,
                      typename Stream::Segment* product = nullptr, int product_input = -1) {
    using fusion::detail::count;
    using fusion::detail::Counter;
    if (c.view) {
      Handle t = c.view->owner.lock();
      Handle src = std::move(c.view->source);
      if (!t) return;
      if (!src->value) {
        t->error =
            src->error ? src->error : std::make_shared<const std::string>("an input was not made");
        return;
      }
      H x = src.use_count() == 1 ? std::move(*src->value) : *src->value;
      try {
        t->value = run_named<B>(c.view->op, std::span<H>(&x, 1), t->meta, dev);
      } catch (const std::exception& e) {
        t->error = std::make_shared<const std::string>(e.what());
        throw;
      }
      return;
    }
    std::vector<typename Stream::Entry>& entries = c.entries;
    std::vector<Handle>& inputs = c.inputs;
    const std::optional<typename Stream::PendingReduction>& reduction = c.reduction;
    const Shape& shape = c.shape;
    const bool has_shape = c.has_shape;
    size_t n = entries.size();
    std::vector<Handle> owners(n);
    std::vector<char> needed(n, 0);
    Handle reduced = reduction ? reduction->owner.lock() : nullptr;
    if (reduced) needed[size_t(reduction->value)] = 1;
    for (size_t i = n; i-- > 0;) {
      owners[i] = entries[i].owner.lock();
      // A constant carried to a later program is that program's to make.
      if (owners[i] && owners[i]->generation != c.generation) owners[i] = nullptr;
      if (owners[i]) needed[i] = 1;
      if (!needed[i]) continue;
      for (int a = 0; a < entries[i].arity; ++a)
        if (!fusion::Program::is_input(entries[i].args[a])) needed[entries[i].args[a]] = 1;
    }
    // Constants of another shape (or with nothing else recorded) that are still held run on
    // their own: a program writes values of its shape only.
    for (size_t i = 0; i < n; ++i) {
      if (!owners[i] || entries[i].code != OpCode::Full) continue;
      if (has_shape && entries[i].meta.shape == shape) continue;
      owners[i]->value =
          B::run(fusion::full_op(entries[i].value, entries[i].meta), {}, entries[i].meta, dev);
    }

    // The program over the needed steps.
    fusion::Program p;
    p.shape = shape;
    std::vector<int32_t> step_of(n, -1), input_of(inputs.size(), -1);
    std::vector<int> used_inputs;
    int dead = 0;
    for (size_t i = 0; i < n; ++i) {
      if (!needed[i]) {
        if (entries[i].code != OpCode::Full) ++dead;
        continue;
      }
      const auto& e = entries[i];
      if (e.code == OpCode::Full) {
        step_of[i] = p.constant(e.value, e.meta.dtype);
      } else {
        fusion::Step st;
        st.code = e.code;
        st.dtype = e.meta.dtype;
        st.arity = static_cast<int8_t>(e.arity);
        for (int a = 0; a < e.arity; ++a) {
          Ref r = e.args[a];
          if (fusion::Program::is_input(r)) {
            int k = fusion::Program::input_index(r);
            if (input_of[k] < 0) {
              input_of[k] = static_cast<int32_t>(p.inputs.size());
              p.inputs.push_back(inputs[k]->meta);
              used_inputs.push_back(k);
            }
            st.args[a] = fusion::Program::input(input_of[k]);
          } else {
            st.args[a] = step_of[r];
          }
        }
        p.steps.push_back(st);
        step_of[i] = static_cast<int32_t>(p.steps.size() - 1);
      }
    }
    count(Counter::DeadSteps, dead);
    std::vector<size_t> out_entries;
    for (size_t i = 0; i < n; ++i)
      if (owners[i] && !owners[i]->value && has_shape && entries[i].meta.shape == shape) {
        p.outputs.push_back(step_of[i]);
        out_entries.push_back(i);
      }
    if (reduced)
      p.reduction = fusion::Reduction{reduction->op, step_of[reduction->value], reduced->meta};
    if (p.outputs.empty() && !p.reduction) return;

    // An input an earlier program failed to make: its error is this program's tensors' too.
    std::optional<std::array<H, 2>> ab;  // the operands of the product, when it is an input
    for (int k : used_inputs) {
      if (k == product_input) {
        ab = product_operands(*product->product, inputs[k]);
        if (ab) continue;
      }
      if (!inputs[k]->value) {
        auto why = inputs[k]->error ? inputs[k]->error
                                    : std::make_shared<const std::string>("an input was not made");
        for (size_t i : out_entries) owners[i]->error = why;
        if (reduced) reduced->error = why;
        return;
      }
    }
    // Inner handles of the inputs; a tensor only the stream still held hands its buffer over.
    std::vector<H> in_handles;
    in_handles.reserve(used_inputs.size());
    int product_at = -1;
    for (int k : used_inputs) {
      Handle& h = inputs[k];
      if (k == product_input) {
        product_at = static_cast<int>(in_handles.size());
        in_handles.emplace_back();
        continue;
      }
      if (h.use_count() == 1)
        in_handles.push_back(std::move(*h->value));
      else
        in_handles.push_back(*h->value);
    }
    inputs.clear();

    if (fusion::dumping()) fusion::dump(p.dump());
    std::vector<H> outs;
    try {
      if (product_at >= 0)
        outs = run_with_product(product->product->op, *ab, p, product_at, in_handles, dev);
      else
        outs = run_program(p, in_handles, dev);
    } catch (const std::exception& e) {
      std::string why = e.what();
      std::string where = p.where();
      if (why.find(where) == std::string::npos) why += " " + where;
      auto shared = std::make_shared<const std::string>(std::move(why));
      for (size_t i : out_entries) owners[i]->error = shared;
      if (reduced) reduced->error = shared;
      throw;
    }
    int steps = 0;
    for (const fusion::Step& st : p.steps) steps += st.code != OpCode::Full;
    count(Counter::Programs);
    count(Counter::FusedSteps, steps);
    count(Counter::Outputs, static_cast<int64_t>(out_entries.size()));
    for (size_t j = 0; j < out_entries.size(); ++j)
      owners[out_entries[j]]->value = std::move(outs[j]);
    if (reduced) {
      count(Counter::Reductions);
      reduced->value = std::move(outs.back());
    }
  }

  // The program with the matmul `mm` of `ab` making its input `at`: as the GEMM's epilogue where
  // the backend can, else the matmul, then the program.
  static std::vector<H> run_with_product(const Op& mm, std::array<H, 2>& ab,
                                         const fusion::Program& p, int at, std::vector<H>& in,
                                         Device dev) {
    if constexpr (fusion::EpilogueBackend<B>) {
      std::optional<std::vector<H>> outs =
          B::run_epilogue(mm, std::span<H>(ab.data(), 2), p, at, std::span<H>(in), dev);
      if (outs) return std::move(*outs);
    }
    in[size_t(at)] = run_validated<B>(mm, std::span<H>(ab.data(), 2), p.inputs[size_t(at)], dev);
    return run_program(p, in, dev);
  }

  static std::vector<H> run_program(const fusion::Program& p, std::vector<H>& in, Device dev) {
    if constexpr (fusion::FusedBackend<B>) {
      try {
        return B::run_fused(p, std::span<H>(in), dev);
      } catch (const MemoryError& e) {
        if (e.names_site()) throw;
        // Named here, so that an op whose input this program makes does not take it as its own.
        throw MemoryError("[fusion] " + std::string(e.what()) + " " + p.where(), e.bytes());
      } catch (const std::exception& e) {
        // A program the backend could not compile or launch: the ops one by one, so an
        // error names its op.
        fusion::detail::count(fusion::detail::Counter::Fallbacks);
        if (fusion::dumping()) fusion::dump(std::string("fused kernel failed: ") + e.what() + "\n");
      }
    }
    return replay(p, in, dev);
  }

  // The program's ops in order on B, each value released after its last use.
  static std::vector<H> replay(const fusion::Program& p, std::vector<H>& in, Device dev) {
    std::vector<Op> ops = fusion::detail::step_ops(p, p.shape.rank());
    std::vector<H> constants(p.steps.size());
    for (size_t i = 0; i < p.steps.size(); ++i)
      if (p.steps[i].code == OpCode::Full)
        constants[i] =
            run_validated<B>(ops[i], {}, {Shape(ops[i].attrs.shape), p.steps[i].dtype}, dev);
    std::vector<H> v = fusion::detail::run_steps<B>(p, ops, std::span<H>(in), true, constants, dev);
    fusion::detail::count(fusion::detail::Counter::ReplayedOps,
                          static_cast<int64_t>(p.steps.size()));
    std::vector<H> outs;
    for (int32_t o : p.outputs) outs.push_back(v[o]);
    if (p.reduction) outs.push_back(fusion::detail::run_reduction<B>(p, v, dev));
    return outs;
  }
};

}  // namespace ember
