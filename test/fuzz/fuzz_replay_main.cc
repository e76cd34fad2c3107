// A main for fuzz targets that needs no libFuzzer: feeds a seed corpus, then a
// fixed sequence of pseudo-random mutations of it, to the target's
// LLVMFuzzerTestOneInput. It makes every target an ordinary test that runs
// with any compiler, and it replays a crash input found by a real fuzzer in a
// plain debug build.
//
// Usage: fuzz_<name>_replay [--mutations=N] [--seed=S] [--max_seconds=T]
//                           [--crash_file=PATH] PATH...
// A PATH is a corpus directory (its regular files, subdirectories included,
// in path order) or one file.
// The run is identical every time for the same corpus and flags: the
// generator and every choice drawn from it are defined here, not by the
// standard library, whose distributions differ between implementations.
// --max_seconds only shortens the run (a slow sanitizer build); it never
// changes which inputs come first. When the target aborts or crashes, the
// input that did it is written to --crash_file. Single-threaded.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

// Mutants grow by insertion and splicing; past this they are cut back so one
// mutant cannot make the run slow.
constexpr size_t kMaxMutantBytes = 64 * 1024;

// Bytes and tokens that matter to the formats fuzzed here (JSON structure and
// escapes, number edges, MessagePack tags), so a mutant reaches interesting
// paths in a few steps instead of by chance.
constexpr uint8_t kInterestingBytes[] = {0x00, 0x01, 0x7F, 0x80, 0xFF, '[',  ']',  '{',  '}',
                                         '"',  '\\', ':',  ',',  '-',  '0',  '9',  'e',  '.',
                                         '\n', ' ',  0xC0, 0xC1, 0xCA, 0xCB, 0xD9, 0xDC, 0xDF};
constexpr std::string_view kTokens[] = {
    "null",
    "true",
    "[",
    "{\"a\":",
    "\"\\u0000\"",
    "\"\\ud800\"",
    "1e308",
    "-1e400",
    "-0",
    "0.1",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551616",
    "\xC3\xA9",
    "\xED\xA0\x80",
    "\xF4\x90\x80\x80",
    "NaN",
    "-Infinity",
    "\"name\":",
    "\"benchmarks\":[",
};

// The input being run, for the crash handler, and the handlers it displaced.
// Mutable globals because a signal handler has no other way to reach them.
struct CrashState {
  const uint8_t* data = nullptr;
  size_t size = 0;
  const char* crash_file = nullptr;
};
CrashState g_current;
constexpr int kFatalSignals[] = {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL};
struct sigaction g_previous[std::size(kFatalSignals)];
// A stack overflow is one of the crashes to catch, and then the handler has
// no stack left of its own; it runs on this one instead.
alignas(16) char g_signal_stack[64 * 1024];

// Saves the input, then hands the signal to whoever handled it before (a
// sanitizer's reporter, or the default action). Async-signal-safe: only open,
// write, close, sigaction and raise.
void OnFatalSignal(int signal_number) {
  if (g_current.data != nullptr && g_current.crash_file != nullptr) {
    const int fd = open(g_current.crash_file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      size_t done = 0;
      while (done < g_current.size) {
        const ssize_t n = write(fd, g_current.data + done, g_current.size - done);
        if (n <= 0) break;
        done += static_cast<size_t>(n);
      }
      close(fd);
      constexpr char kNote[] = "fuzz replay: the failing input was written to ";
      [[maybe_unused]] ssize_t ignored = write(STDERR_FILENO, kNote, sizeof kNote - 1);
      ignored = write(STDERR_FILENO, g_current.crash_file, strlen(g_current.crash_file));
      ignored = write(STDERR_FILENO, "\n", 1);
    }
  }
  for (size_t i = 0; i < std::size(kFatalSignals); ++i) {
    if (kFatalSignals[i] == signal_number) sigaction(signal_number, &g_previous[i], nullptr);
  }
  // A fault (SEGV, BUS, FPE, ILL) happens again when the handler returns, now
  // reaching the previous handler; an abort has to be raised again.
  if (signal_number == SIGABRT) raise(signal_number);
}

void InstallCrashHandler() {
  stack_t alternate = {};
  alternate.ss_sp = g_signal_stack;
  alternate.ss_size = sizeof g_signal_stack;
  sigaltstack(&alternate, nullptr);
  struct sigaction action = {};
  action.sa_handler = OnFatalSignal;
  action.sa_flags = SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  for (size_t i = 0; i < std::size(kFatalSignals); ++i) {
    sigaction(kFatalSignals[i], &action, &g_previous[i]);
  }
}

// SplitMix64: tiny, fast and fully specified, so runs match on every platform.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform enough in [0, n) for n far below 2^64; n must be positive.
  size_t Below(size_t n) { return static_cast<size_t>(Next() % n); }

 private:
  uint64_t state_;
};

using Bytes = std::vector<uint8_t>;

// One edit of `b`; `corpus` supplies material for splicing.
void MutateOnce(Bytes& b, const std::vector<Bytes>& corpus, Random& rng) {
  const size_t op = b.empty() ? 2 + rng.Below(2) : rng.Below(9);
  switch (op) {
    case 0: {  // flip one bit
      b[rng.Below(b.size())] ^= static_cast<uint8_t>(1u << rng.Below(8));
      break;
    }
    case 1: {  // overwrite with a byte that means something to a parser
      b[rng.Below(b.size())] = kInterestingBytes[rng.Below(std::size(kInterestingBytes))];
      break;
    }
    case 2: {  // insert one to four random bytes
      const size_t at = rng.Below(b.size() + 1);
      const size_t n = 1 + rng.Below(4);
      for (size_t i = 0; i < n; ++i) {
        b.insert(b.begin() + static_cast<ptrdiff_t>(at), static_cast<uint8_t>(rng.Next()));
      }
      break;
    }
    case 3: {  // insert a token
      const std::string_view token = kTokens[rng.Below(std::size(kTokens))];
      b.insert(b.begin() + static_cast<ptrdiff_t>(rng.Below(b.size() + 1)), token.begin(),
               token.end());
      break;
    }
    case 4: {  // erase a short range
      const size_t at = rng.Below(b.size());
      const size_t n = 1 + rng.Below(std::min<size_t>(16, b.size() - at));
      b.erase(b.begin() + static_cast<ptrdiff_t>(at), b.begin() + static_cast<ptrdiff_t>(at + n));
      break;
    }
    case 5: {  // truncate
      b.resize(rng.Below(b.size()));
      break;
    }
    case 6: {  // repeat a chunk in place: deeper nesting, longer arrays
      const size_t at = rng.Below(b.size());
      const size_t n = 1 + rng.Below(std::min<size_t>(32, b.size() - at));
      const Bytes chunk(b.begin() + static_cast<ptrdiff_t>(at),
                        b.begin() + static_cast<ptrdiff_t>(at + n));
      const size_t copies = 1 + rng.Below(8);
      for (size_t i = 0; i < copies; ++i) {
        b.insert(b.begin() + static_cast<ptrdiff_t>(at), chunk.begin(), chunk.end());
      }
      break;
    }
    case 7: {  // nudge a byte up or down (lengths, digits, tags)
      const size_t at = rng.Below(b.size());
      b[at] = static_cast<uint8_t>(b[at] + (rng.Below(2) == 0 ? 1 : 0xFF));
      break;
    }
    default: {  // splice: our prefix, then the tail of another seed
      const Bytes& other = corpus[rng.Below(corpus.size())];
      b.resize(rng.Below(b.size() + 1));
      if (!other.empty()) {
        b.insert(b.end(), other.begin() + static_cast<ptrdiff_t>(rng.Below(other.size())),
                 other.end());
      }
      break;
    }
  }
  if (b.size() > kMaxMutantBytes) b.resize(kMaxMutantBytes);
}

void Run(const Bytes& input, const char* crash_file) {
  // A copy at exactly the input's size, so ASan notices a read one past the end.
  auto exact = std::make_unique<uint8_t[]>(std::max<size_t>(input.size(), 1));
  std::copy(input.begin(), input.end(), exact.get());
  g_current = {exact.get(), input.size(), crash_file};
  LLVMFuzzerTestOneInput(exact.get(), input.size());
  g_current = {};
}

bool ReadFile(const std::filesystem::path& path, Bytes* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

bool ParseFlag(std::string_view arg, std::string_view name, uint64_t* value) {
  if (arg.substr(0, name.size()) != name) return false;
  *value = std::strtoull(std::string(arg.substr(name.size())).c_str(), nullptr, 10);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t mutations = 0;
  uint64_t seed = 1;
  uint64_t max_seconds = 0;  // 0: no limit
  std::string crash_file = "fuzz-replay-crash";
  std::vector<std::filesystem::path> files;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (ParseFlag(arg, "--mutations=", &mutations) || ParseFlag(arg, "--seed=", &seed) ||
        ParseFlag(arg, "--max_seconds=", &max_seconds)) {
      continue;
    }
    if (arg.substr(0, 13) == "--crash_file=") {
      crash_file = std::string(arg.substr(13));
      continue;
    }
    if (arg.substr(0, 2) == "--") {
      std::fprintf(stderr, "unknown flag %s\n", argv[i]);
      return 2;
    }
    std::error_code ec;
    if (std::filesystem::is_directory(arg, ec)) {
      std::vector<std::filesystem::path> in_dir;
      for (const auto& entry : std::filesystem::recursive_directory_iterator(arg, ec)) {
        if (entry.is_regular_file()) in_dir.push_back(entry.path());
      }
      std::sort(in_dir.begin(), in_dir.end());  // directory order is not stable
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else {
      files.emplace_back(arg);
    }
  }
  if (files.empty()) {
    std::fprintf(stderr,
                 "usage: %s [--mutations=N] [--seed=S] [--max_seconds=T] [--crash_file=PATH] "
                 "CORPUS_DIR_OR_FILE...\n",
                 argv[0]);
    return 2;
  }

  std::vector<Bytes> corpus;
  for (const auto& path : files) {
    Bytes bytes;
    if (!ReadFile(path, &bytes)) {
      std::fprintf(stderr, "cannot read %s\n", path.c_str());
      return 2;
    }
    corpus.push_back(std::move(bytes));
  }

  InstallCrashHandler();
  const auto start = std::chrono::steady_clock::now();
  for (const Bytes& input : corpus) Run(input, crash_file.c_str());

  Random rng(seed);
  uint64_t done = 0;
  for (; done < mutations; ++done) {
    // Checking the clock every 256 inputs keeps its cost out of the loop.
    if (max_seconds != 0 && done % 256 == 0 &&
        std::chrono::steady_clock::now() - start > std::chrono::seconds(max_seconds)) {
      break;
    }
    Bytes mutant = corpus[rng.Below(corpus.size())];
    const size_t edits = 1 + rng.Below(8);
    for (size_t i = 0; i < edits; ++i) MutateOnce(mutant, corpus, rng);
    Run(mutant, crash_file.c_str());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("ran %zu corpus inputs and %llu of %llu mutations in %.1f s\n", corpus.size(),
              static_cast<unsigned long long>(done), static_cast<unsigned long long>(mutations),
              seconds);
  return 0;
}
