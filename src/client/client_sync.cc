// Client's typed sync calls: each writes its request with sync_messages.h,
// sends the text as it is (no tree is built for a request) and reads the
// reply back with the same header.
#include <future>
#include <memory>
#include <utility>

#include "client/client.h"

namespace skiff::client {
namespace {

template <typename T>
using Done = std::function<void(Result<T>)>;

// The blocking form of a callback form: the callback runs on the I/O
// thread, this thread waits for it.
template <typename T, typename Start>
Result<T> Await(Start start) {
  auto promise = std::make_shared<std::promise<Result<T>>>();
  std::future<Result<T>> future = promise->get_future();
  start([promise](Result<T> result) { promise->set_value(std::move(result)); });
  return future.get();
}

// A reply callback that reads a successful reply with `decode`.
template <typename T, typename Decode>
ReplyCallback Decoded(Done<T> done, Decode decode) {
  return [done = std::move(done), decode](Reply reply) {
    if (!reply.ok()) return done(reply.status());
    done(decode(*reply));
  };
}

}  // namespace

void Client::Push(const PushRequest& request, Done<PushReply> done) {
  Send(EncodeRequest(request), Decoded<PushReply>(std::move(done), DecodePushReply));
}

Result<PushReply> Client::Push(const PushRequest& request) {
  return Await<PushReply>([&](Done<PushReply> done) { Push(request, std::move(done)); });
}

void Client::Pull(const PullRequest& request, Done<PullReply> done) {
  Send(EncodeRequest(request), Decoded<PullReply>(std::move(done), DecodePullReply));
}

Result<PullReply> Client::Pull(const PullRequest& request) {
  return Await<PullReply>([&](Done<PullReply> done) { Pull(request, std::move(done)); });
}

void Client::Wait(const WaitRequest& request, Done<WaitReply> done) {
  Send(EncodeRequest(request), Decoded<WaitReply>(std::move(done), DecodeWaitReply));
}

Result<WaitReply> Client::Wait(const WaitRequest& request) {
  return Await<WaitReply>([&](Done<WaitReply> done) { Wait(request, std::move(done)); });
}

void Client::Bootstrap(const BootstrapRequest& request, Done<BootstrapPage> done,
                       OnNextPage on_next) {
  // One of the two callbacks runs: the text one for a reply in the usual
  // form (read without a tree), the other for an error or a reply the
  // server wrote otherwise (printed back to text and read the same way).
  struct Shared {
    Done<BootstrapPage> done;
    OnNextPage on_next;
  };
  auto shared = std::make_shared<Shared>(Shared{std::move(done), std::move(on_next)});
  Send(
      EncodeRequest(request),
      [shared](Reply reply) {
        if (!reply.ok()) return shared->done(reply.status());
        shared->done(DecodeBootstrapReply(doc::Dump(*reply), shared->on_next));
      },
      [shared](std::string text) { shared->done(DecodeBootstrapReply(text, shared->on_next)); });
}

Result<BootstrapPage> Client::Bootstrap(const BootstrapRequest& request) {
  return Await<BootstrapPage>(
      [&](Done<BootstrapPage> done) { Bootstrap(request, std::move(done)); });
}

}  // namespace skiff::client
