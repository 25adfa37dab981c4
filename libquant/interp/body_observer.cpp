#include "libquant/interp/body_observer.h"

namespace quant::interp {
namespace {

thread_local int observe_bodies = 0;
thread_local const Observer* current = nullptr;
thread_local std::string scope;

}  // namespace

ObserveBodies::ObserveBodies() { ++observe_bodies; }
ObserveBodies::~ObserveBodies() { --observe_bodies; }

const std::string& body_scope() { return scope; }

namespace detail {

CurrentObserver::CurrentObserver(const Observer& observer) : saved_(current) {
  if (observe_bodies > 0 && observer) current = &observer;
}
CurrentObserver::~CurrentObserver() { current = saved_; }

const Observer* body_observer() { return observe_bodies > 0 ? current : nullptr; }

EnterScope::EnterScope(const std::string& part) : saved_size_(scope.size()) { scope += part + "/"; }
EnterScope::~EnterScope() { scope.resize(saved_size_); }

}  // namespace detail
}  // namespace quant::interp
