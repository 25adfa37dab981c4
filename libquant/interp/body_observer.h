// Observing values computed inside If/Loop/Scan bodies (qprofile). By default
// a Session's observer sees only its own graph's values; on a thread holding
// an ObserveBodies, a control-flow kernel also runs its bodies with the
// observer of the run in progress, and the observer reads body_scope() to
// name what it sees: "" in the main graph, "<scope>/" inside a body
// (ir/scope.h: "branches/then_branch/", nested ones joined). A Loop body's
// values are observed at every iteration. A body's outer-scope inputs are
// not observed again (they are the enclosing graph's values).
#pragma once

#include <string>

#include "libquant/interp/session.h"

namespace quant::interp {

class ObserveBodies {
 public:
  ObserveBodies();
  ~ObserveBodies();
  ObserveBodies(const ObserveBodies&) = delete;
  ObserveBodies& operator=(const ObserveBodies&) = delete;
};

const std::string& body_scope();

namespace detail {
// Set by Session::run for the duration of a run with an observer.
class CurrentObserver {
 public:
  explicit CurrentObserver(const Observer& observer);
  ~CurrentObserver();
  CurrentObserver(const CurrentObserver&) = delete;
  CurrentObserver& operator=(const CurrentObserver&) = delete;

 private:
  const Observer* saved_;
};
// The observer bodies run with on this thread (null: bodies not observed).
const Observer* body_observer();
// Enters a body's scope (`part` is its ir::body_scope) for the guard's life.
class EnterScope {
 public:
  explicit EnterScope(const std::string& part);
  ~EnterScope();
  EnterScope(const EnterScope&) = delete;
  EnterScope& operator=(const EnterScope&) = delete;

 private:
  size_t saved_size_;
};
}  // namespace detail

}  // namespace quant::interp
