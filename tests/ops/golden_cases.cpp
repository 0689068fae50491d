// The ember call for each golden op key (see golden.h). `x` is input 0 as Tensor<B, D, K>
// with D its rank and K its kind; other inputs come from `a.t<D, K>(i)`.
#include "golden_op.h"

namespace ember::test {

namespace act = ember::activation;

// Spatial ops: calls f.template operator()<D>() with D the rank of input 0 (3, 4 or 5).
template <Backend B, class F>
typename B::Handle by_spatial_rank(const Args<B>& a, F f) {
  switch (a.rank(0)) {
    case 3:
      return f.template operator()<3>().handle();
    case 4:
      return f.template operator()<4>().handle();
    case 5:
      return f.template operator()<5>().handle();
    default:
      throw ValueError("[golden] spatial rank not wired");
  }
}

template <Backend B>
Dims dims_attr(const Args<B>& a, const char* k) {
  return a.attrs->contains(k) ? Dims(a.va(k)) : Dims{};
}

template <Backend B>
InterpMode interp_mode(const Args<B>& a) {
  std::string m = a.attrs->at("mode").template get<std::string>();
  if (m == "nearest") return InterpMode::Nearest;
  if (m == "nearest-exact") return InterpMode::NearestExact;
  if (m == "area") return InterpMode::Area;
  if (m == "bicubic") return InterpMode::Cubic;
  return InterpMode::Linear;  // linear, bilinear, trilinear
}

// layer_norm and rms_norm: calls f.template operator()<D, G>() with D the rank of x (1 to 4)
// and G the rank of gamma (1 or 2: the normalized trailing dims).
template <Backend B, class F>
typename B::Handle by_norm_ranks(const Args<B>& a, F f) {
  const size_t d = a.rank(0), g = a.rank(1);
  if (g == 1 && d == 1) return f.template operator()<1, 1>().handle();
  if (g == 1 && d == 2) return f.template operator()<2, 1>().handle();
  if (g == 1 && d == 3) return f.template operator()<3, 1>().handle();
  if (g == 2 && d == 2) return f.template operator()<2, 2>().handle();
  if (g == 2 && d == 3) return f.template operator()<3, 2>().handle();
  throw ValueError("[golden] norm ranks not wired");
}

template <Backend B>
std::map<std::string, OpFn<B>>& golden_ops() {
  using A = Args<B>;
  static std::map<std::string, OpFn<B>> ops = [] {
    std::map<std::string, OpFn<B>> ops;
    // unary
    OP("neg", NUM, x.neg());
    OP("abs", NUM, x.abs());
    OP("sign", NUM, x.sign());
    OP("square", NUM, x.square());
    OP("exp", FLT, x.exp());
    OP("expm1", FLT, x.expm1());
    OP("log", FLT, x.log());
    OP("log1p", FLT, x.log1p());
    OP("log2", FLT, x.log2());
    OP("sqrt", FLT, x.sqrt());
    OP("rsqrt", FLT, x.rsqrt());
    OP("recip", FLT, x.recip());
    OP("sin", FLT, x.sin());
    OP("cos", FLT, x.cos());
    OP("tan", FLT, x.tan());
    OP("asin", FLT, x.asin());
    OP("acos", FLT, x.acos());
    OP("atan", FLT, x.atan());
    OP("sinh", FLT, x.sinh());
    OP("cosh", FLT, x.cosh());
    OP("tanh", FLT, x.tanh());
    OP("asinh", FLT, x.asinh());
    OP("acosh", FLT, x.acosh());
    OP("atanh", FLT, x.atanh());
    OP("erf", FLT, x.erf());
    OP("sigmoid", FLT, x.sigmoid());
    OP("floor", FLT, x.floor());
    OP("ceil", FLT, x.ceil());
    OP("round", FLT, x.round());
    OP("trunc", FLT, x.trunc());
    OP("is_nan", FLT, x.is_nan());
    OP("is_inf", FLT, x.is_inf());
    OP("bitwise_not", INT, x.bitwise_not());
    OP("bool_not", BOOL, x.bool_not());
    // binary
    OP("add", NUM, x.add(Y));
    OP("sub", NUM, x.sub(Y));
    OP("mul", NUM, x * Y);
    OP("div", NUM, x / Y);
    OP("remainder", NUM, x.remainder(Y));
    OP("pow", NUM, x.pow(Y));
    OP("max_pair", NUM, x.max_pair(Y));
    OP("min_pair", NUM, x.min_pair(Y));
    OP("atan2", FLT, x.atan2(Y));
    OP("bitwise_and", INT, x.bitwise_and(Y));
    OP("bitwise_or", INT, x.bitwise_or(Y));
    OP("bitwise_xor", INT, x.bitwise_xor(Y));
    OP("bitwise_left_shift", INT, x.bitwise_left_shift(Y));
    OP("bitwise_right_shift", INT, x.bitwise_right_shift(Y));
    OP("bool_and", BOOL, x.bool_and(Y));
    OP("bool_or", BOOL, x.bool_or(Y));
    OP("bool_xor", BOOL, x.bool_xor(Y));
    OP("add_scalar", NUM, x + (std::is_same_v<K, Int> ? Scalar(a.ia("s")) : Scalar(a.fa("s"))));
    OP("sub_scalar", NUM, x - a.fa("s"));
    OP("mul_scalar", NUM, x * a.fa("s"));
    OP("div_scalar", NUM, x / a.fa("s"));
    OP("rsub_scalar", NUM, Scalar(a.fa("s")) - x);
    OP("rdiv_scalar", NUM, Scalar(a.fa("s")) / x);
    OP("pow_scalar", FLT, x.pow_scalar(a.fa("s")));
    OP("powi_scalar", FLT, x.powi_scalar(a.ia("s")));
    OP("clamp", NUM, x.clamp(a.fa("lo"), a.fa("hi")));
    OP("clamp_min", NUM, x.clamp_min(a.fa("lo")));
    OP("clamp_max", NUM, x.clamp_max(a.fa("hi")));
    OP("bitwise_and_scalar", INT, x.bitwise_and_scalar(a.ia("s")));
    OP("bitwise_left_shift_scalar", INT, x.bitwise_left_shift_scalar(a.ia("s")));
    // comparisons and masks
    OP("equal", NUM, x.equal(Y));
    OP("not_equal", NUM, x.not_equal(Y));
    OP("greater", NUM, x.greater(Y));
    OP("greater_equal", NUM, x.greater_equal(Y));
    OP("lower", NUM, x.lower(Y));
    OP("lower_equal", NUM, x.lower_equal(Y));
    OP("equal_elem", NUM, x.equal_elem(a.fa("s")));
    OP("not_equal_elem", NUM, x.not_equal_elem(a.fa("s")));
    OP("greater_elem", NUM, x.greater_elem(a.fa("s")));
    OP("greater_equal_elem", NUM, x.greater_equal_elem(a.fa("s")));
    OP("lower_elem", NUM, x.lower_elem(a.fa("s")));
    OP("lower_equal_elem", NUM, x.lower_equal_elem(a.fa("s")));
    ops["where"] = [](const A& a) {
      DType t = B::meta(a.in[1]).dtype;
      if (is_float(t))
        return where(a.template b<3>(0), a.template f<3>(1), a.template f<3>(2)).handle();
      return where(a.template b<2>(0), a.template i<2>(1), a.template i<2>(2)).handle();
    };
    OP("mask_fill", FLT, x.mask_fill(a.template t<D, Bool>(1), a.fa("v")));
    OP("mask_where", FLT, x.mask_where(a.template t<D, Bool>(1), Z));
    OP("mask_select", FLT, x.mask_select(a.template t<D, Bool>(1)));
    OP("cast_i32", FLT, x.int_(DType::I32));
    OP("cast_f16", FLT, x.cast(DType::F16));
    OP("cast_bf16", FLT, x.cast(DType::BF16));
    OP("cast_f64", INT, x.float_(DType::F64));
    OP("cast_bool", INT, x.bool_());
    OP("cast_u8", INT, x.cast(DType::U8));
    // reductions, scans, sorting
    OP("sum", NUM, x.sum());
    OP("sum_dim", NUM, x.sum_dim(a.ia("dim")));
    OP("sum_dims", NUM, x.sum_dims(Dims(a.va("dims"))));
    OP("mean", FLT, x.mean());
    OP("mean_dim", FLT, x.mean_dim(a.ia("dim")));
    OP("logsumexp", FLT, x.logsumexp(a.ia("dim")));
    OP("prod", NUM, x.prod());
    OP("prod_dim", NUM, x.prod_dim(a.ia("dim")));
    OP("max", NUM, x.max());
    OP("max_dim", NUM, x.max_dim(a.ia("dim")));
    OP("min", NUM, x.min());
    OP("min_dim", NUM, x.min_dim(a.ia("dim")));
    OP("argmax", NUM, x.argmax(a.ia("dim")));
    OP("argmin", NUM, x.argmin(a.ia("dim")));
    OP("var", FLT, x.var(a.ia("dim")));
    OP("var_bias", FLT, x.var_bias(a.ia("dim")));
    OP("any", ANY, x.any());
    OP("all", ANY, x.all());
    OP("any_dim", ANY, x.any_dim(a.ia("dim")));
    OP("all_dim", ANY, x.all_dim(a.ia("dim")));
    OP("cumsum", NUM, x.cumsum(a.ia("dim")));
    OP("cumprod", NUM, x.cumprod(a.ia("dim")));
    OP("cummax", NUM, x.cummax(a.ia("dim")));
    OP("cummin", NUM, x.cummin(a.ia("dim")));
    OP("sort", NUM, x.sort(a.ia("dim")));
    OP("sort_descending", NUM, x.sort_descending(a.ia("dim")));
    OP("argsort", NUM, x.argsort(a.ia("dim")));
    OP("argsort_descending", NUM, x.argsort_descending(a.ia("dim")));
    OP("topk", NUM, x.topk(a.ia("k"), a.ia("dim")));
    OP("matmul", NUM, x.matmul(Y));
    // shape and movement (fixed ranks, as the cases give them)
    ops["reshape"] = [](const A& a) {
      return a.template f<3>(0).template reshape<2>({4, -1}).handle();
    };
    ops["flatten"] = [](const A& a) {
      return a.template f<3>(0).template flatten<2>(1, 2).handle();
    };
    ops["permute"] = [](const A& a) { return a.template f<3>(0).permute({2, 0, 1}).handle(); };
    ops["transpose"] = [](const A& a) { return a.template f<3>(0).transpose().handle(); };
    ops["swap_dims"] = [](const A& a) { return a.template f<3>(0).swap_dims(0, 2).handle(); };
    ops["movedim"] = [](const A& a) { return a.template f<3>(0).movedim(0, 2).handle(); };
    ops["unsqueeze_dim"] = [](const A& a) {
      return a.template f<2>(0).template unsqueeze_dim<3>(1).handle();
    };
    ops["squeeze"] = [](const A& a) { return a.template f<3>(0).template squeeze<2>(1).handle(); };
    ops["expand"] = [](const A& a) {
      return a.template f<2>(0).template expand<3>({2, 3, 4}).handle();
    };
    ops["repeat"] = [](const A& a) { return a.template f<3>(0).repeat({2, 1, 3}).handle(); };
    ops["flip"] = [](const A& a) { return a.template f<3>(0).flip({0, 2}).handle(); };
    ops["roll_dim"] = [](const A& a) {
      return a.template f<2>(0).roll_dim(a.ia("shift"), a.ia("dim")).handle();
    };
    ops["narrow"] = [](const A& a) { return a.template f<3>(0).narrow(1, 1, 2).handle(); };
    ops["slice"] = [](const A& a) {
      if (a.rank(0) == 3)
        return a.template f<3>(0)
            .slice({Slice(0, 2), Slice(0, INT64_MAX, 2), Slice(1, -1)})
            .handle();
      return a.template f<2>(0).slice({Slice::from(-2), Slice(1, INT64_MAX, 3)}).handle();
    };
    ops["slice_reversed"] = [](const A& a) {
      return a.template f<2>(0).slice({Slice::all(), Slice(1, 4, -1)}).handle();
    };
    ops["slice_assign"] = [](const A& a) {
      return a.template f<2>(0)
          .slice_assign({Slice(0, 2), Slice(1, 5, 2)}, a.template f<2>(1))
          .handle();
    };
    ops["cat"] = [](const A& a) {
      if (a.rank(0) == 3)
        return cat<B, 3, Float>({a.template f<3>(0), a.template f<3>(1)}, 1).handle();
      return cat<B, 2, Int>({a.template i<2>(0), a.template i<2>(1)}, 0).handle();
    };
    ops["stack"] = [](const A& a) {
      return stack<3>(std::vector{a.template f<2>(0), a.template f<2>(1)}, 1).handle();
    };
    ops["chunk1"] = [](const A& a) { return a.template f<2>(0).chunk(3, 1).at(1).handle(); };
    ops["split_last"] = [](const A& a) { return a.template f<2>(0).split(3, 0).back().handle(); };
    ops["gather"] = [](const A& a) {
      return a.template f<2>(0).gather(1, a.template i<2>(1)).handle();
    };
    ops["scatter"] = [](const A& a) {
      return a.template f<2>(0).scatter(1, a.template i<2>(1), a.template f<2>(2)).handle();
    };
    ops["scatter_add"] = [](const A& a) {
      return a.template f<2>(0).scatter_add(0, a.template i<2>(1), a.template f<2>(2)).handle();
    };
    OP("select", NUM, x.select(a.ia("dim"), a.template i<1>(1)));
    ops["select_assign"] = [](const A& a) {
      return a.template f<2>(0).select_assign(0, a.template i<1>(1), a.template f<2>(2)).handle();
    };
    ops["gather_nd"] = [](const A& a) {
      return a.template f<3>(0).template gather_nd<2>(a.template i<2>(1)).handle();
    };
    ops["one_hot"] = [](const A& a) {
      return a.template i<1>(0).template one_hot<2, Float>(5).handle();
    };
    ops["tril"] = [](const A& a) { return a.template f<3>(0).tril(0).handle(); };
    ops["triu"] = [](const A& a) { return a.template f<2>(0).triu(1).handle(); };
    ops["pad"] = [](const A& a) { return a.template f<3>(0).pad({1, 2, 0, 1}, 0.5).handle(); };
    ops["unfold"] = [](const A& a) { return a.template f<3>(0).unfold(1, 3, 2).handle(); };
    OP("is_finite", FLT, x.is_finite());
    OP("is_close", FLT, x.is_close(Y, 1e-3, 1e-4));
    ops["dot"] = [](const A& a) { return a.template f<1>(0).dot(a.template f<1>(1)).handle(); };
    ops["cross"] = [](const A& a) {
      return a.template f<2>(0).cross(a.template f<2>(1), 1).handle();
    };
    ops["cov"] = [](const A& a) { return a.template f<2>(0).cov().handle(); };
    ops["one_hot_fill"] = [](const A& a) {
      return a.template i<2>(0).template one_hot_fill<3, Float>(4, 1.5, -0.5, 0).handle();
    };
    ops["tril_mask"] = [](const A&) { return Tensor<B, 2, Bool>::tril_mask(3, 5, 1).handle(); };
    ops["triu_mask"] = [](const A&) { return Tensor<B, 2, Bool>::triu_mask(3, 5, 0).handle(); };
    ops["diag_mask"] = [](const A&) { return Tensor<B, 2, Bool>::diag_mask(3, 5, 0).handle(); };
    ops["eye"] = [](const A&) { return Tensor<B, 2>::eye(4).handle(); };
    ops["arange"] = [](const A&) {
      return Tensor<B, 1, Int>::arange(int64_t{2}, int64_t{11}, int64_t{3}).handle();
    };
    ops["arange_f"] = [](const A&) { return Tensor<B, 1>::arange(0.5, 2.0, 0.25).handle(); };
    ops["full"] = [](const A&) { return Tensor<B, 2>::full({2, 3}, 1.25).handle(); };
    OP("zeros_like", FLT, x.zeros_like());
    // activations
    OP("relu", FLT, act::relu(x));
    OP("gelu", FLT, act::gelu(x));
    OP("gelu_tanh", FLT, act::gelu_tanh(x));
    OP("silu", FLT, act::silu(x));
    OP("mish", FLT, act::mish(x));
    OP("elu", FLT, act::elu(x));
    OP("celu", FLT, act::celu(x));
    OP("selu", FLT, act::selu(x));
    OP("hard_sigmoid", FLT, act::hard_sigmoid(x));
    OP("hard_swish", FLT, act::hard_swish(x));
    OP("log_sigmoid", FLT, act::log_sigmoid(x));
    OP("leaky_relu", FLT, act::leaky_relu(x));
    OP("softplus", FLT, act::softplus(x));
    OP("softplus_beta", FLT, act::softplus(x, 2.0, 3.0));
    OP("softmax", FLT, act::softmax(x, a.ia("dim")));
    OP("log_softmax", FLT, act::log_softmax(x, a.ia("dim")));
    OP("softmin", FLT, act::softmin(x, a.ia("dim")));
    ops["prelu"] = [](const A& a) {
      return act::prelu(a.template f<3>(0), a.template f<1>(1).template reshape<3>({1, -1, 1}))
          .handle();
    };
    // nn ops (ember/tensor/nn_ops.h); the input's rank picks 1-d, 2-d or 3-d
    ops["conv"] = [](const A& a) {
      return by_spatial_rank(a, [&]<int D>() {
        ConvOptions o{dims_attr(a, "stride"), dims_attr(a, "padding"), dims_attr(a, "dilation"),
                      a.ia("groups")};
        return conv(a.template f<D>(0), a.template f<D>(1), o);
      });
    };
    ops["conv_transpose"] = [](const A& a) {
      return by_spatial_rank(a, [&]<int D>() {
        ConvTransposeOptions o{dims_attr(a, "stride"), dims_attr(a, "padding"),
                               dims_attr(a, "output_padding"), dims_attr(a, "dilation"),
                               a.ia("groups")};
        return conv_transpose(a.template f<D>(0), a.template f<D>(1), o);
      });
    };
    ops["conv_weight_grad"] = [](const A& a) {  // the backward op itself
      return by_spatial_rank(a, [&]<int D>() {
        OpAttrs at;
        at.window = {dims_attr(a, "kernel"),
                     dims_attr(a, "stride"),
                     dims_attr(a, "padding"),
                     dims_attr(a, "dilation"),
                     {},
                     a.ia("groups")};
        return detail::run_spatial<D>(OpCode::ConvWeightGrad, at, a.template f<D>(0),
                                      a.template f<D>(1));
      });
    };
    ops["max_pool"] = [](const A& a) {
      return by_spatial_rank(a, [&]<int D>() {
        PoolOptions o{dims_attr(a, "stride"), dims_attr(a, "padding"), dims_attr(a, "dilation"),
                      a.ba("ceil_mode")};
        return max_pool(a.template f<D>(0), dims_attr(a, "kernel"), o);
      });
    };
    ops["avg_pool"] = [](const A& a) {
      return by_spatial_rank(a, [&]<int D>() {
        PoolOptions o{dims_attr(a, "stride"),
                      dims_attr(a, "padding"),
                      {},
                      a.ba("ceil_mode"),
                      a.ba("count_include_pad")};
        return avg_pool(a.template f<D>(0), dims_attr(a, "kernel"), o);
      });
    };
    ops["adaptive_avg_pool"] = [](const A& a) {
      return by_spatial_rank(
          a, [&]<int D>() { return adaptive_avg_pool(a.template f<D>(0), dims_attr(a, "size")); });
    };
    ops["interpolate"] = [](const A& a) {
      return by_spatial_rank(a, [&]<int D>() {
        bool align = a.attrs->contains("align_corners") && a.ba("align_corners");
        return interpolate(a.template f<D>(0), dims_attr(a, "size"), interp_mode(a), align);
      });
    };
    // backward ops run directly (2-d cases); attrs.shape is the forward input's size
    ops["avg_pool_backward"] = [](const A& a) {
      OpAttrs at;
      at.window.kernel = dims_attr(a, "kernel");
      at.window.stride = dims_attr(a, "stride");
      at.window.padding = dims_attr(a, "padding");
      at.window.ceil_mode = a.ba("ceil_mode");
      at.window.count_include_pad = a.ba("count_include_pad");
      at.shape = dims_attr(a, "size");
      return detail::run_spatial<4>(OpCode::AvgPoolBackward, at, a.template f<4>(0)).handle();
    };
    ops["adaptive_avg_pool_backward"] = [](const A& a) {
      OpAttrs at;
      at.shape = dims_attr(a, "size");
      return detail::run_spatial<4>(OpCode::AdaptiveAvgPoolBackward, at, a.template f<4>(0))
          .handle();
    };
    ops["interpolate_backward"] = [](const A& a) {
      OpAttrs at;
      at.shape = dims_attr(a, "size");
      at.interp = interp_mode(a);
      at.flag = a.ba("align_corners");
      return detail::run_spatial<4>(OpCode::InterpolateBackward, at, a.template f<4>(0)).handle();
    };
    ops["nn_unfold"] = [](const A& a) {
      UnfoldOptions o{dims_attr(a, "dilation"), dims_attr(a, "padding"), dims_attr(a, "stride")};
      return unfold(a.template f<4>(0), dims_attr(a, "kernel"), o).handle();
    };
    ops["nn_fold"] = [](const A& a) {
      UnfoldOptions o{dims_attr(a, "dilation"), dims_attr(a, "padding"), dims_attr(a, "stride")};
      return fold<4>(a.template f<3>(0), dims_attr(a, "size"), dims_attr(a, "kernel"), o).handle();
    };
    // attention on rank-3 or rank-4 inputs; the mask (input 3, optional) has the same rank
    ops["attention"] = [](const A& a) {
      auto run = [&]<int D>() {
        AttentionOptions<B, D> o;
        if (a.in.size() > 3) o.mask = a.template b<D>(3);
        o.causal = a.attrs->contains("causal") && a.ba("causal");
        if (a.attrs->contains("scale")) o.scale = a.fa("scale");
        return scaled_dot_product_attention(a.template f<D>(0), a.template f<D>(1),
                                            a.template f<D>(2), o)
            .handle();
      };
      if (a.rank(0) == 3) return run.template operator()<3>();
      if (a.rank(0) == 4) return run.template operator()<4>();
      throw ValueError("[golden] attention rank not wired");
    };
    ops["layer_norm"] = [](const A& a) {
      return by_norm_ranks(a, [&]<int D, int G>() {
        return layer_norm(a.template f<D>(0), a.template f<G>(1), a.template f<G>(2), a.fa("eps"));
      });
    };
    ops["rms_norm"] = [](const A& a) {
      return by_norm_ranks(a, [&]<int D, int G>() {
        return rms_norm(a.template f<D>(0), a.template f<G>(1), a.fa("eps"));
      });
    };
    ops["int_matmul"] = [](const A& a) {
      if (a.rank(0) == 2) return int_matmul(a.template i<2>(0), a.template i<2>(1)).handle();
      if (a.rank(0) == 3) return int_matmul(a.template i<3>(0), a.template i<3>(1)).handle();
      throw ValueError("[golden] int_matmul rank not wired");
    };
    ops["int_conv"] = [](const A& a) {
      return by_spatial_rank(a, [&]<int D>() {
        ConvOptions o{dims_attr(a, "stride"), dims_attr(a, "padding"), dims_attr(a, "dilation"),
                      a.ia("groups")};
        return int_conv(a.template i<D>(0), a.template i<D>(1), o);
      });
    };
    add_breadth_ops<B>(ops);
    return ops;
  }();
  return ops;
}

template std::map<std::string, OpFn<Dispatch>>& golden_ops<Dispatch>();
template std::map<std::string, OpFn<Autodiff<Dispatch>>>& golden_ops<Autodiff<Dispatch>>();

}  // namespace ember::test
