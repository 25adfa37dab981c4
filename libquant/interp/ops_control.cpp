// If, Loop, Scan, SequenceMap: control flow over subgraphs. Each body (a GRAPH attribute,
// kept serialized on the node so that export round-trips it) is imported at
// prepare time and gets its own nested Session; values of enclosing graphs
// that a body reads become the kernel's implicit inputs (Kernel::implicit_inputs),
// which the enclosing Session resolves and passes after the node's inputs.
#include <algorithm>
#include <cstring>

#include "libquant/interp/body_observer.h"
#include "libquant/interp/ops.h"
#include "libquant/interp/session.h"
#include "libquant/ir/scope.h"
#include "libquant/onnx/model_io.h"

namespace quant::interp {
namespace {

// One imported body and its session.
struct Body {
  std::unique_ptr<ir::Graph> graph;   // owned here: the session refers to it
  std::unique_ptr<Session> session;
  size_t formal_inputs = 0;
  std::string scope;                  // ir::body_scope of the body, for observers (body_observer.h)
  std::vector<size_t> outer_index;    // per outer-scope name: index in the kernel's implicit list
  size_t output_count() const { return graph->outputs.size(); }
};

Expected<Body> load_body(const KernelContext& ctx, const std::string& attr, std::vector<std::string>& implicit) {
  const ir::Node& node = ctx.node;
  const ir::Attribute* a = node.find_attribute(attr);
  if (!a || a->kind != ir::Attribute::Kind::Graph)
    return Status::bad_input(node.op_type + " needs the graph attribute '" + attr + "'");
  const std::map<std::string, int64_t> opsets =
      ctx.graph ? ctx.graph->opset_imports : std::map<std::string, int64_t>{{"", ctx.opset}};
  auto sub = onnx_io::import_subgraph(a->s, opsets);
  if (!sub) return sub.status().with_context("attribute '" + attr + "'");
  Body body;
  body.graph = std::move(sub->graph);
  body.formal_inputs = sub->formal_inputs;
  body.scope = ir::body_scope("", node, attr);
  auto session = Session::create(*body.graph, ctx.options);
  if (!session) return session.status().with_context("attribute '" + attr + "'");
  body.session = std::move(session).value();
  for (const std::string& name : sub->outer_names) {
    auto it = std::find(implicit.begin(), implicit.end(), name);
    body.outer_index.push_back(static_cast<size_t>(it - implicit.begin()));
    if (it == implicit.end()) implicit.push_back(name);
  }
  return body;
}

// Runs a body: `formal` are its declared inputs; outer-scope values are read
// from the kernel inputs after the node's `explicit_count` inputs.
Expected<std::vector<Tensor>> run_body(const Body& body, std::span<const Tensor* const> formal,
                                       std::span<const Tensor* const> kernel_inputs, size_t explicit_count) {
  std::vector<const Tensor*> feed(formal.begin(), formal.end());
  for (size_t k : body.outer_index) {
    const size_t i = explicit_count + k;
    if (i >= kernel_inputs.size() || !kernel_inputs[i]) return Status::internal("outer-scope value of a subgraph is missing");
    feed.push_back(kernel_inputs[i]);
  }
  const Observer* observer = detail::body_observer();
  if (!observer) return body.session->run(std::span<const Tensor* const>(feed));
  // Values of the body, named in its scope; its outer-scope inputs are the
  // enclosing graph's values, observed there.
  const detail::EnterScope scope(body.scope);
  const auto& inputs = body.graph->inputs;
  const Observer in_body = [&](const ir::Value& v, const Tensor& t) {
    for (size_t i = body.formal_inputs; i < inputs.size(); ++i)
      if (inputs[i] == &v) return;
    (*observer)(v, t);
  };
  return body.session->run(std::span<const Tensor* const>(feed), in_body);
}

// The single value of a condition / count tensor.
Expected<bool> read_condition(const ir::Node& node, const Tensor& t, const char* what) {
  if (t.dtype() != DType::Bool || t.size() != 1)
    return Status::bad_input(node.op_type + " " + what + " must be a bool tensor of one element, got " +
                             std::string(dtype_name(t.dtype())) + " " + dims_to_string(t.shape()));
  return t.data<uint8_t>()[0] != 0;
}

// A control-flow kernel: holds its bodies and names its outer-scope reads.
class ControlKernel : public Kernel {
 public:
  std::vector<std::string> implicit_inputs() const final { return implicit_; }

 protected:
  std::vector<std::string> implicit_;
};

// If (opset 1-16, tensor-typed outputs): runs then_branch or else_branch.
class IfKernel final : public ControlKernel {
 public:
  static KernelResult create(const KernelContext& ctx) {
    std::unique_ptr<IfKernel> k(new IfKernel(ctx.node));
    QT_ASSIGN_OR_RETURN(k->then_, load_body(ctx, "then_branch", k->implicit_));
    QT_ASSIGN_OR_RETURN(k->else_, load_body(ctx, "else_branch", k->implicit_));
    for (const Body* b : {&k->then_, &k->else_}) {
      if (b->formal_inputs != 0) return Status::bad_input("If branches take no inputs");
      if (b->output_count() != ctx.node.outputs.size())
        return Status::bad_input("If branch has " + std::to_string(b->output_count()) + " outputs, the node " +
                                 std::to_string(ctx.node.outputs.size()));
    }
    return std::unique_ptr<Kernel>(std::move(k));
  }

  Status run(std::span<const Tensor* const> in, std::vector<Tensor>& out) const override {
    QT_RETURN_IF_ERROR(require_inputs(node_, in, 1));
    QT_ASSIGN_OR_RETURN(bool cond, read_condition(node_, *in[0], "cond"));
    const Body& branch = cond ? then_ : else_;
    auto results = run_body(branch, {}, in, node_.inputs.size());
    if (!results) return results.status().with_context(cond ? "then_branch" : "else_branch");
    for (size_t k = 0; k < out.size() && k < results->size(); ++k) out[k] = std::move((*results)[k]);
    return Status::ok();
  }

 private:
  explicit IfKernel(const ir::Node& node) : node_(node) {}
  const ir::Node& node_;
  Body then_, else_;
};

// Stacks equally shaped tensors along a new axis `axis` (element i at
// position i, or count-1-i when `reverse`). `empty_dtype` types the result
// of zero parts.
Expected<Tensor> stack(const std::vector<Tensor>& parts, int64_t axis, bool reverse, DType empty_dtype, const Dims& empty_shape) {
  if (parts.empty()) {
    Dims shape = empty_shape;
    shape.insert(shape.begin() + std::clamp<int64_t>(axis, 0, static_cast<int64_t>(shape.size())), 0);
    return Tensor::create(empty_dtype, shape);
  }
  const Tensor& first = parts[0];
  if (axis < 0 || axis > first.rank()) return Status::bad_input("scan output axis " + std::to_string(axis) + " is out of range");
  for (const Tensor& p : parts)
    if (p.dtype() != first.dtype() || p.shape() != first.shape())
      return Status::bad_input("scan output changes from " + std::string(dtype_name(first.dtype())) + " " +
                               dims_to_string(first.shape()) + " to " + std::string(dtype_name(p.dtype())) + " " +
                               dims_to_string(p.shape()) + " between iterations");
  Dims shape = first.shape();
  const int64_t count = static_cast<int64_t>(parts.size());
  shape.insert(shape.begin() + axis, count);
  QT_ASSIGN_OR_RETURN(Tensor out, Tensor::create(first.dtype(), shape));
  const size_t es = dtype_size(first.dtype());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < first.rank(); ++d) (d < axis ? outer : inner) *= first.dim(d);
  auto* dst = static_cast<char*>(out.raw());
  for (int64_t i = 0; i < count; ++i) {
    const int64_t pos = reverse ? count - 1 - i : i;
    const auto* src = static_cast<const char*>(parts[static_cast<size_t>(i)].raw());
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(dst + ((o * count + pos) * inner) * es, src + o * inner * es, static_cast<size_t>(inner) * es);
  }
  return out;
}

// Declared element type and shape of a body output, for zero-iteration scan outputs.
DType declared_dtype(const ir::Value* v) { return v->dtype == DType::Undefined ? DType::Float32 : v->dtype; }
Dims declared_shape(const ir::Value* v) {
  if (!v->has_shape || std::any_of(v->shape.begin(), v->shape.end(), [](int64_t d) { return d < 0; })) return {};
  return v->shape;
}

// Loop (opset 1-16, tensor-typed loop-carried values and scan outputs).
class LoopKernel final : public ControlKernel {
 public:
  static KernelResult create(const KernelContext& ctx) {
    const ir::Node& node = ctx.node;
    std::unique_ptr<LoopKernel> k(new LoopKernel(node));
    QT_ASSIGN_OR_RETURN(k->body_, load_body(ctx, "body", k->implicit_));
    if (node.inputs.size() < 2) return Status::bad_input("Loop needs inputs M and cond (either may be empty)");
    k->carried_ = node.inputs.size() - 2;
    if (k->body_.formal_inputs != 2 + k->carried_)
      return Status::bad_input("Loop body takes " + std::to_string(k->body_.formal_inputs) + " inputs, expected 2 + " +
                               std::to_string(k->carried_) + " loop-carried");
    if (k->body_.output_count() < 1 + k->carried_)
      return Status::bad_input("Loop body must output cond and the " + std::to_string(k->carried_) + " loop-carried values");
    k->scans_ = k->body_.output_count() - 1 - k->carried_;
    if (node.outputs.size() != k->carried_ + k->scans_)
      return Status::bad_input("Loop has " + std::to_string(node.outputs.size()) + " outputs, its body makes " +
                               std::to_string(k->carried_) + " loop-carried + " + std::to_string(k->scans_) + " scan outputs");
    return std::unique_ptr<Kernel>(std::move(k));
  }

  Status run(std::span<const Tensor* const> in, std::vector<Tensor>& out) const override {
    // M absent: no limit; cond absent: true (ONNX Loop).
    int64_t trip_limit = -1;
    if (in[0]) {
      if (in[0]->dtype() != DType::Int64 || in[0]->size() != 1)
        return Status::bad_input("Loop M must be an int64 tensor of one element");
      trip_limit = std::max<int64_t>(in[0]->data<int64_t>()[0], 0);
    }
    Tensor cond(DType::Bool, {});
    cond.data<uint8_t>()[0] = 1;
    if (in[1]) {
      QT_ASSIGN_OR_RETURN(bool c, read_condition(node_, *in[1], "cond"));
      cond.data<uint8_t>()[0] = c ? 1 : 0;
    }
    std::vector<Tensor> carried;
    for (size_t i = 0; i < carried_; ++i) {
      if (!in[2 + i]) return Status::bad_input("Loop loop-carried input " + std::to_string(i) + " is missing");
      carried.push_back(*in[2 + i]);
    }
    std::vector<std::vector<Tensor>> scan_parts(scans_);
    Tensor iteration = Tensor::scalar<int64_t>(0);
    std::vector<const Tensor*> formal(2 + carried_);
    for (int64_t i = 0; (trip_limit < 0 || i < trip_limit) && cond.data<uint8_t>()[0] != 0; ++i) {
      iteration.data<int64_t>()[0] = i;
      formal[0] = &iteration;
      formal[1] = &cond;
      for (size_t c = 0; c < carried_; ++c) formal[2 + c] = &carried[c];
      auto results = run_body(body_, formal, in, node_.inputs.size());
      if (!results) return results.status().with_context("body, iteration " + std::to_string(i));
      QT_ASSIGN_OR_RETURN(bool next, read_condition(node_, (*results)[0], "body output cond"));
      cond.data<uint8_t>()[0] = next ? 1 : 0;
      for (size_t c = 0; c < carried_; ++c) carried[c] = std::move((*results)[1 + c]);
      for (size_t s = 0; s < scans_; ++s) scan_parts[s].push_back(std::move((*results)[1 + carried_ + s]));
    }
    for (size_t c = 0; c < carried_ && c < out.size(); ++c) out[c] = std::move(carried[c]);
    for (size_t s = 0; s < scans_ && carried_ + s < out.size(); ++s) {
      const ir::Value* decl = body_.graph->outputs[1 + carried_ + s];
      QT_ASSIGN_OR_RETURN(out[carried_ + s], stack(scan_parts[s], 0, false, declared_dtype(decl), declared_shape(decl)));
    }
    return Status::ok();
  }

 private:
  explicit LoopKernel(const ir::Node& node) : node_(node) {}
  const ir::Node& node_;
  Body body_;
  size_t carried_ = 0;
  size_t scans_ = 0;
};

// Slice `index` of t along `axis`, the axis removed.
Tensor take_slice(const Tensor& t, int64_t axis, int64_t index) {
  Tensor out = slice_along(t, axis, index, 1);
  Dims shape = out.shape();
  shape.erase(shape.begin() + axis);
  out.reshape(std::move(shape));
  return out;
}

// Scan: opset 9-16 (axes and directions per scan input/output), and opset 8
// (a leading batch axis on every input and output, scan axis 1, optional
// sequence_lens; steps past a batch entry's length are zero in the scan
// outputs).
class ScanKernel final : public ControlKernel {
 public:
  static KernelResult create(const KernelContext& ctx) {
    const ir::Node& node = ctx.node;
    std::unique_ptr<ScanKernel> k(new ScanKernel(node));
    k->batched_ = ctx.opset < 9;
    QT_ASSIGN_OR_RETURN(k->body_, load_body(ctx, "body", k->implicit_));
    const int64_t m = node.attr_int("num_scan_inputs", -1);
    const size_t first = k->batched_ ? 1 : 0;  // opset 8: input 0 is sequence_lens
    if (m < 1 || static_cast<size_t>(m) + first > node.inputs.size())
      return Status::bad_input("Scan num_scan_inputs must be between 1 and the number of inputs");
    k->scan_inputs_ = static_cast<size_t>(m);
    k->states_ = node.inputs.size() - first - k->scan_inputs_;
    if (k->body_.formal_inputs != k->states_ + k->scan_inputs_)
      return Status::bad_input("Scan body takes " + std::to_string(k->body_.formal_inputs) + " inputs, expected " +
                               std::to_string(k->states_ + k->scan_inputs_));
    if (k->body_.output_count() < k->states_ || node.outputs.size() != k->body_.output_count())
      return Status::bad_input("Scan outputs do not match its body's outputs");
    k->scan_outputs_ = k->body_.output_count() - k->states_;
    auto per_item = [&](const char* key, size_t n, const char* what) -> Expected<std::vector<int64_t>> {
      std::vector<int64_t> v = node.attr_ints(key);
      if (v.empty()) return std::vector<int64_t>(n, 0);
      if (v.size() != n) return Status::bad_input(std::string("Scan ") + key + " needs one value per " + what);
      return v;
    };
    if (k->batched_) {
      QT_ASSIGN_OR_RETURN(k->in_dirs_, per_item("directions", k->scan_inputs_, "scan input"));
      k->in_axes_.assign(k->scan_inputs_, 0);
      k->out_axes_.assign(k->scan_outputs_, 0);
      k->out_dirs_.assign(k->scan_outputs_, 0);
    } else {
      QT_ASSIGN_OR_RETURN(k->in_axes_, per_item("scan_input_axes", k->scan_inputs_, "scan input"));
      QT_ASSIGN_OR_RETURN(k->in_dirs_, per_item("scan_input_directions", k->scan_inputs_, "scan input"));
      QT_ASSIGN_OR_RETURN(k->out_axes_, per_item("scan_output_axes", k->scan_outputs_, "scan output"));
      QT_ASSIGN_OR_RETURN(k->out_dirs_, per_item("scan_output_directions", k->scan_outputs_, "scan output"));
    }
    return std::unique_ptr<Kernel>(std::move(k));
  }

  Status run(std::span<const Tensor* const> in, std::vector<Tensor>& out) const override {
    const size_t first = batched_ ? 1 : 0;
    QT_RETURN_IF_ERROR(require_inputs(node_, in.subspan(first), states_ + scan_inputs_));
    if (!batched_) {
      std::vector<const Tensor*> states(in.begin(), in.begin() + static_cast<long>(states_));
      std::vector<const Tensor*> scans(in.begin() + static_cast<long>(states_), in.begin() + static_cast<long>(states_ + scan_inputs_));
      return scan(states, scans, -1, in, out);
    }
    // Opset 8: run each batch entry on its own, then stack along axis 0.
    const Tensor* lens = in[0];
    const Tensor& x0 = *in[1 + states_];
    if (x0.rank() < 2) return Status::bad_input("Scan (opset 8) scan inputs need a batch and a sequence axis");
    const int64_t batch = x0.dim(0), seq = x0.dim(1);
    if (lens && (lens->dtype() != DType::Int32 || lens->size() != batch))
      return Status::bad_input("Scan sequence_lens must be int32 with one value per batch entry");
    for (size_t i = 0; i < states_ + scan_inputs_; ++i)
      if (in[1 + i]->rank() < 1 || in[1 + i]->dim(0) != batch)
        return Status::bad_input("Scan (opset 8) inputs must share the batch size " + std::to_string(batch));
    std::vector<std::vector<Tensor>> per_batch(out.size());
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<Tensor> sliced;
      sliced.reserve(states_ + scan_inputs_);
      for (size_t i = 0; i < states_ + scan_inputs_; ++i) sliced.push_back(take_slice(*in[1 + i], 0, b));
      std::vector<const Tensor*> states, scans;
      for (size_t i = 0; i < states_; ++i) states.push_back(&sliced[i]);
      for (size_t i = 0; i < scan_inputs_; ++i) scans.push_back(&sliced[states_ + i]);
      int64_t len = seq;
      if (lens) {
        len = lens->data<int32_t>()[b];
        if (len < 0 || len > seq) return Status::bad_input("Scan sequence_lens value " + std::to_string(len) + " is outside [0, " + std::to_string(seq) + "]");
      }
      std::vector<Tensor> results(out.size());
      QT_RETURN_IF_ERROR(scan(states, scans, len, in, results));
      for (size_t s = states_; s < results.size(); ++s) {
        // Pad short sequences with zeros up to `seq` steps.
        Tensor& r = results[s];
        if (r.rank() >= 1 && r.dim(0) < seq) {
          Dims shape = r.shape();
          shape[0] = seq;
          QT_ASSIGN_OR_RETURN(Tensor padded, Tensor::create(r.dtype(), shape));
          std::memcpy(padded.raw(), r.raw(), r.byte_size());
          r = std::move(padded);
        }
      }
      for (size_t k = 0; k < results.size(); ++k) per_batch[k].push_back(std::move(results[k]));
    }
    for (size_t k = 0; k < out.size(); ++k) {
      const ir::Value* decl = body_.graph->outputs[k];
      QT_ASSIGN_OR_RETURN(out[k], stack(per_batch[k], 0, false, declared_dtype(decl), declared_shape(decl)));
    }
    return Status::ok();
  }

 private:
  explicit ScanKernel(const ir::Node& node) : node_(node) {}

  // One scan: `length` < 0 means the scan inputs' full length.
  Status scan(const std::vector<const Tensor*>& states_in, const std::vector<const Tensor*>& scans, int64_t length,
              std::span<const Tensor* const> kernel_inputs, std::vector<Tensor>& out) const {
    std::vector<int64_t> axes(scan_inputs_);
    int64_t seq = -1;
    for (size_t i = 0; i < scan_inputs_; ++i) {
      const Tensor& x = *scans[i];
      const int64_t rank = x.rank();
      int64_t axis = in_axes_[i] < 0 ? in_axes_[i] + rank : in_axes_[i];
      if (axis < 0 || axis >= rank) return Status::bad_input("Scan input axis " + std::to_string(in_axes_[i]) + " is out of range for " + dims_to_string(x.shape()));
      axes[i] = axis;
      if (seq >= 0 && x.dim(axis) != seq) return Status::bad_input("Scan inputs have different sequence lengths");
      seq = x.dim(axis);
    }
    if (length >= 0) seq = std::min(seq, length);
    std::vector<Tensor> states;
    for (const Tensor* t : states_in) states.push_back(*t);
    std::vector<std::vector<Tensor>> parts(scan_outputs_);
    std::vector<Tensor> slices(scan_inputs_);
    std::vector<const Tensor*> formal(states_ + scan_inputs_);
    for (int64_t step = 0; step < seq; ++step) {
      for (size_t i = 0; i < scan_inputs_; ++i) {
        // Reverse scans start at the last step inside the (opset 8) length.
        slices[i] = take_slice(*scans[i], axes[i], in_dirs_[i] != 0 ? seq - 1 - step : step);
      }
      for (size_t s = 0; s < states_; ++s) formal[s] = &states[s];
      for (size_t i = 0; i < scan_inputs_; ++i) formal[states_ + i] = &slices[i];
      auto results = run_body(body_, formal, kernel_inputs, node_.inputs.size());
      if (!results) return results.status().with_context("body, iteration " + std::to_string(step));
      for (size_t s = 0; s < states_; ++s) states[s] = std::move((*results)[s]);
      for (size_t k = 0; k < scan_outputs_; ++k) parts[k].push_back(std::move((*results)[states_ + k]));
    }
    for (size_t s = 0; s < states_ && s < out.size(); ++s) out[s] = std::move(states[s]);
    for (size_t k = 0; k < scan_outputs_ && states_ + k < out.size(); ++k) {
      const ir::Value* decl = body_.graph->outputs[states_ + k];
      int64_t axis = out_axes_[k];
      if (axis < 0) axis += (parts[k].empty() ? static_cast<int64_t>(declared_shape(decl).size()) : parts[k][0].rank()) + 1;
      QT_ASSIGN_OR_RETURN(out[states_ + k], stack(parts[k], axis, out_dirs_[k] != 0, declared_dtype(decl), declared_shape(decl)));
    }
    return Status::ok();
  }

  const ir::Node& node_;
  Body body_;
  bool batched_ = false;
  size_t states_ = 0, scan_inputs_ = 0, scan_outputs_ = 0;
  std::vector<int64_t> in_axes_, in_dirs_, out_axes_, out_dirs_;
};

// SequenceMap (opset 17): runs the body once per element of the first input
// sequence; every other input that is a sequence (of the same length) gives
// its i-th element, a tensor input is passed whole. Output k is the sequence
// of the body's output k over the iterations.
class SequenceMapKernel final : public ControlKernel {
 public:
  static KernelResult create(const KernelContext& ctx) {
    const ir::Node& node = ctx.node;
    std::unique_ptr<SequenceMapKernel> k(new SequenceMapKernel(node));
    QT_ASSIGN_OR_RETURN(k->body_, load_body(ctx, "body", k->implicit_));
    if (node.inputs.empty()) return Status::bad_input("SequenceMap needs an input sequence");
    if (k->body_.formal_inputs != node.inputs.size())
      return Status::bad_input("SequenceMap body takes " + std::to_string(k->body_.formal_inputs) + " inputs, the node has " +
                               std::to_string(node.inputs.size()));
    if (k->body_.output_count() != node.outputs.size())
      return Status::bad_input("SequenceMap body makes " + std::to_string(k->body_.output_count()) + " outputs, the node has " +
                               std::to_string(node.outputs.size()));
    return std::unique_ptr<Kernel>(std::move(k));
  }

  Status run(std::span<const Tensor* const> in, std::vector<Tensor>& out) const override {
    const size_t explicit_count = node_.inputs.size();
    QT_RETURN_IF_ERROR(require_inputs(node_, in, explicit_count));
    if (in[0]->kind() != Tensor::Kind::Sequence) return Status::bad_input("SequenceMap input 0 must be a sequence");
    const size_t count = in[0]->items().size();
    for (size_t j = 1; j < explicit_count; ++j)
      if (in[j]->kind() == Tensor::Kind::Sequence && in[j]->items().size() != count)
        return Status::bad_input("SequenceMap input " + std::to_string(j) + " has " + std::to_string(in[j]->items().size()) +
                                 " elements, input 0 has " + std::to_string(count));
    std::vector<std::vector<Tensor>> results(out.size());
    std::vector<const Tensor*> formal(explicit_count);
    for (size_t i = 0; i < count; ++i) {
      for (size_t j = 0; j < explicit_count; ++j)
        formal[j] = in[j]->kind() == Tensor::Kind::Sequence ? &in[j]->items()[i] : in[j];
      auto r = run_body(body_, formal, in, explicit_count);
      if (!r) return r.status().with_context("body, element " + std::to_string(i));
      for (size_t k = 0; k < out.size() && k < r->size(); ++k) results[k].push_back(std::move((*r)[k]));
    }
    for (size_t k = 0; k < out.size(); ++k) {
      const DType elem = results[k].empty() ? declared_dtype(body_.graph->outputs[k]) : results[k][0].dtype();
      out[k] = Tensor::sequence(elem, std::move(results[k]));
    }
    return Status::ok();
  }

 private:
  explicit SequenceMapKernel(const ir::Node& node) : node_(node) {}
  const ir::Node& node_;
  Body body_;
};

}  // namespace

KernelResult make_sequence_map(const KernelContext& ctx) { return SequenceMapKernel::create(ctx); }
KernelResult make_if(const KernelContext& ctx) { return IfKernel::create(ctx); }
KernelResult make_loop(const KernelContext& ctx) { return LoopKernel::create(ctx); }
KernelResult make_scan(const KernelContext& ctx) { return ScanKernel::create(ctx); }

}  // namespace quant::interp
