#include "libquant/tune/evaluate.h"

#include <functional>

namespace quant::tune {

Expected<std::unique_ptr<Evaluator>> Evaluator::create(const ir::Graph& reference, std::vector<std::vector<Tensor>> samples,
                                                       std::vector<int64_t> labels, const RunSetup& setup,
                                                       const interp::Observer& observer,
                                                       const std::function<Status()>& end_sample) {
  auto e = std::unique_ptr<Evaluator>(new Evaluator());
  e->setup_ = setup;
  e->labels_ = std::move(labels);
  // The float reference: exact arithmetic, no fusion (an observer sees every value).
  interp::SessionOptions options;
  options.threads = setup.session.threads;
  interp::PlanOptions unfused;
  unfused.fuse = false;
  QT_ASSIGN_OR_RETURN(auto session, interp::Session::create(reference, options, unfused));
  for (auto& x : samples) {
    QT_ASSIGN_OR_RETURN(auto out, session->run(x, observer));
    if (end_sample) QT_RETURN_IF_ERROR(end_sample());
    e->reference_.push_back(std::move(out));
  }
  e->inputs_ = std::move(samples);
  return e;
}

Expected<Score> Evaluator::evaluate(std::unique_ptr<ir::Graph> quantized) const {
  QT_ASSIGN_OR_RETURN(Prepared p, prepare(std::move(quantized), setup_));
  ++evaluations_;
  Score s;
  s.has_labels = !labels_.empty();
  int64_t row = 0;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    QT_ASSIGN_OR_RETURN(auto outs, p.session->run(inputs_[i]));
    const auto& ref = reference_[i];
    if (outs.size() != ref.size()) return Status::bad_input("the quantized model has other outputs than the float model");
    for (size_t k = 0; k < outs.size(); ++k)
      if (ref[k].dtype() == DType::Float32) QT_RETURN_IF_ERROR(s.error.add(ref[k], outs[k]));
    const auto a = interp::argmax_rows(ref[0]);
    const auto b = interp::argmax_rows(outs[0]);
    for (size_t r = 0; r < a.size() && r < b.size(); ++r, ++row) {
      s.agree += a[r] >= 0 && a[r] == b[r];
      if (s.has_labels && row < static_cast<int64_t>(labels_.size())) {
        s.correct += b[r] >= 0 && b[r] == labels_[static_cast<size_t>(row)];
        s.reference_correct += a[r] >= 0 && a[r] == labels_[static_cast<size_t>(row)];
      }
    }
    s.rows += static_cast<int64_t>(std::min(a.size(), b.size()));
  }
  // With --limit a prefix of the labels is used; fewer labels than rows is an error.
  if (s.has_labels && row > static_cast<int64_t>(labels_.size()))
    return Status::bad_input("there are " + std::to_string(labels_.size()) + " labels for " + std::to_string(row) +
                             " rows of output 0");
  return s;
}

}  // namespace quant::tune
