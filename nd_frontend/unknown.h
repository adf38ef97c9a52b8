// IUnknown for ndnic's ND objects: an atomic reference count and QueryInterface over the
// interface's IID chain.
#pragma once

#include <atomic>

#include "ndnic/ndspi.h"

namespace ndnic::nd {

template <class Iface>
class Unknown : public Iface {
 public:
  ULONG AddRef() override { return ++refs_; }
  ULONG Release() override {
    const ULONG n = --refs_;
    if (n == 0) delete this;
    return n;
  }
  HRESULT QueryInterface(REFIID riid, void** out) override {
    if (!out) return ND_INVALID_PARAMETER;
    if (riid == IID_IUnknown || implements(riid)) {
      AddRef();
      *out = static_cast<Iface*>(this);
      return ND_SUCCESS;
    }
    *out = nullptr;
    return ND_NOT_SUPPORTED;  // E_NOINTERFACE has no ND name
  }

 protected:
  virtual ~Unknown() = default;
  virtual bool implements(REFIID riid) const = 0;

 private:
  std::atomic<ULONG> refs_{1};
};

}  // namespace ndnic::nd
