// skiffd on a SQLite file in a small tmpfs that fills up under load: writes
// fail with a clear store error, nothing acknowledged is lost, and writes
// succeed again once space returns, without a restart. Mounting needs root:
// elsewhere the test skips loudly, and under CI it must run.
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include <sys/mount.h>
#include <unistd.h>

#include "support/postgres.h"
#include "support/temp_dir.h"

#include "test/faults/fault_fixture.h"

namespace skiff::testing {
namespace {

using namespace std::chrono_literals;

class DiskFullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    mount_ = dir_.File("disk");
    std::filesystem::create_directory(mount_);
    if (geteuid() != 0 || mount("tmpfs", mount_.c_str(), "tmpfs", 0, "size=4m") != 0) {
      if (support::InCi()) FAIL() << "cannot mount a tmpfs (needs root): " << strerror(errno);
      GTEST_SKIP() << "*** cannot mount a tmpfs (needs root): disk-full case NOT run";
    }
    mounted_ = true;
  }
  void TearDown() override {
    if (mounted_) umount2(mount_.c_str(), MNT_DETACH);
  }

  // Fills what is left of the tmpfs; the filler file's path.
  std::string Fill() {
    const std::string path = mount_ + "/filler";
    std::ofstream out(path, std::ios::binary);
    const std::string block(64 * 1024, 'x');
    for (int i = 0; i < 1024 && out.write(block.data(), block.size()); ++i) out.flush();
    return path;
  }

  support::TempDir dir_;
  std::string mount_;
  bool mounted_ = false;
};

TEST_F(DiskFullTest, FullDiskFailsWritesClearlyAndLosesNothing) {
  FaultServer server;
  ASSERT_OK(server.Start("sqlite:" + mount_ + "/skiff.db"));
  auto c = server.Connect();
  ASSERT_OK(c);
  int next = 0;
  for (; next < 200; ++next) ASSERT_OK(server.Set(**c, "before" + std::to_string(next), next));
  const std::string filler = Fill();
  // Documents of 16 KiB fill the last pages quickly.
  const std::string big(16 * 1024, 'b');
  Status failed;
  for (int i = 0; i < 2000 && failed.ok(); ++i) {
    failed = (*c)->Set("t", "big" + std::to_string(i), big);
    if (failed.ok()) {
      // Acknowledged: booked like the others.
      (void)server.Set(**c, "acked" + std::to_string(i), i);
    }
  }
  ASSERT_FALSE(failed.ok()) << "the disk never filled";
  EXPECT_TRUE(IsStoreError(failed)) << failed;
  EXPECT_NE(failed.message().find("full"), std::string::npos) << failed;
  // Space returns: writes succeed again, on the same server.
  std::filesystem::remove(filler);
  Status again;
  for (int i = 0; i < 100; ++i) {
    again = server.Set(**c, "after" + std::to_string(i), i);
    if (again.ok()) break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_OK(again);
  c->reset();
  server.StopAndVerify();
}

}  // namespace
}  // namespace skiff::testing
