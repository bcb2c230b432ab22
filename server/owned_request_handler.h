// gRPC's callback handler of a server-streaming method, handing the reactor
// its request as the mutable object it is, so that the reactor may free
// what the job has consumed (Quantize frees the model bytes and calibration
// samples once the job has imported them: QuantizeRpc).
//
// The stock handler (CallbackServerStreamingHandler, grpcpp/impl/codegen/
// server_callback_handlers.h) deserializes every call's request into a new,
// non-const `Request` in the call's arena, gives the reactor factory a
// `const Request*` to it, and destroys it after OnDone. This handler is that
// handler; before it runs, it notes the request gRPC passes it (as
// `void*`, the object's own type) for the thread, and the factory, which the
// stock handler calls on that thread, receives it as `Request*`. No copy:
// the memory is what the stock handler holds. The callback API has no
// allocator for streaming methods (MessageAllocator is unary only).
// Install with grpc::Service::MarkMethodCallback(index, new ...).
#ifndef QUANTD_SERVER_OWNED_REQUEST_HANDLER_H_
#define QUANTD_SERVER_OWNED_REQUEST_HANDLER_H_

#include <grpcpp/impl/codegen/server_callback_handlers.h>
#include <grpcpp/server_context.h>
#include <grpcpp/support/server_callback.h>

#include <functional>
#include <utility>

namespace quantd::server {

template <typename Request, typename Response>
class OwnedRequestStreamingHandler final
    : public grpc::internal::MethodHandler {
 public:
  using Factory = std::function<grpc::ServerWriteReactor<Response>*(
      grpc::CallbackServerContext*, Request*)>;

  explicit OwnedRequestStreamingHandler(Factory factory)
      : stock_([factory = std::move(factory)](grpc::CallbackServerContext* ctx,
                                              const Request* request) {
          Request* owned = running_;
          running_ = nullptr;
          // The stock handler passes the request it was run with: the one
          // noted below (anything else is a gRPC this code does not know).
          return owned == request ? factory(ctx, owned) : nullptr;
        }) {}

  void RunHandler(const HandlerParameter& param) override {
    running_ = static_cast<Request*>(param.request);
    stock_.RunHandler(param);
    running_ = nullptr;
  }
  void* Deserialize(grpc_call* call, grpc_byte_buffer* request,
                    grpc::Status* status, void** handler_data) override {
    return stock_.Deserialize(call, request, status, handler_data);
  }

 private:
  // The request of the call being dispatched on this thread.
  inline static thread_local Request* running_ = nullptr;
  grpc::internal::CallbackServerStreamingHandler<Request, Response> stock_;
};

}  // namespace quantd::server

#endif  // QUANTD_SERVER_OWNED_REQUEST_HANDLER_H_
