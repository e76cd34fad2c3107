// skiffd's settings table (src/cmd/settings.h): every way a setting can be
// given (a flag as --x v, --x=v or bare for a boolean, a SKIFF_* variable,
// a key of the TOML file), their precedence, the errors, and that the
// deployment guide lists every setting --help lists.
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cmd/settings.h"
#include "support/temp_dir.h"

#include "test/status_matchers.h"

namespace skiff::cmd {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Sets variables for one test and restores what was there.
class ScopedEnv {
 public:
  ~ScopedEnv() {
    for (const auto& [name, old] : saved_) {
      if (old.has_value) {
        setenv(name.c_str(), old.value.c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
  }
  void Set(const std::string& name, const std::string& value) {
    Save(name);
    setenv(name.c_str(), value.c_str(), 1);
  }
  void Unset(const std::string& name) {
    Save(name);
    unsetenv(name.c_str());
  }

 private:
  struct Old {
    bool has_value = false;
    std::string value;
  };
  void Save(const std::string& name) {
    for (const auto& [saved, old] : saved_) {
      if (saved == name) return;
    }
    const char* v = std::getenv(name.c_str());
    saved_.push_back({name, Old{v != nullptr, v != nullptr ? v : ""}});
  }
  std::vector<std::pair<std::string, Old>> saved_;
};

// Every SKIFF_* variable of the table cleared, so the machine's own
// environment cannot leak into a test.
class SettingsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CLI::App app;
    SkiffdOptions options;
    std::string config;
    AddSkiffdSettings(app, options, config);
    for (const CLI::Option* option : app.get_options()) {
      if (!option->get_envname().empty()) env_.Unset(option->get_envname());
    }
  }

  Result<SkiffdOptions> Parse(const std::vector<std::string>& args) {
    SkiffdOptions options;
    auto invocation = ParseSkiffdCommandLine(args, options);
    if (!invocation.ok()) return invocation.status();
    return options;
  }

  std::string WriteConfig(const std::string& text) {
    const std::string path = dir_.File("skiffd.toml");
    std::ofstream(path) << text;
    return path;
  }

  ScopedEnv env_;
  support::TempDir dir_;
};

TEST_F(SettingsTest, DefaultsWithNothingGiven) {
  auto o = Parse({});
  ASSERT_OK(o);
  SkiffdOptions defaults;
  EXPECT_EQ(o->store_url, defaults.store_url);
  EXPECT_EQ(o->port, defaults.port);
  EXPECT_FALSE(o->cluster);
  EXPECT_EQ(o->store_wait, seconds(30));
}

TEST_F(SettingsTest, BareBooleanFlagIsTrue) {
  // The report that started this: a bare --cluster took the next flag as
  // its value.
  auto o = Parse({"--cluster", "--store", "postgres://db/skiff"});
  ASSERT_OK(o);
  EXPECT_TRUE(o->cluster);
  EXPECT_EQ(o->store_url, "postgres://db/skiff");
}

TEST_F(SettingsTest, BooleanFlagTakesTrueOrFalse) {
  for (const auto& [args, want] : std::vector<std::pair<std::vector<std::string>, bool>>{
           {{"--cluster=true"}, true},
           {{"--cluster", "true"}, true},
           {{"--cluster=false"}, false},
           {{"--cluster", "false"}, false},
           {{"--cluster", "--cluster=false"}, false},  // the last one wins
       }) {
    auto o = Parse(args);
    ASSERT_OK(o) << ::testing::PrintToString(args);
    EXPECT_EQ(o->cluster, want) << ::testing::PrintToString(args);
  }
  for (const char* bad : {"--cluster=yes", "--cluster=1", "--cluster=on"}) {
    auto o = Parse({bad});
    ASSERT_FALSE(o.ok()) << bad;
    EXPECT_EQ(o.status().code(), StatusCode::kBadRequest);
    EXPECT_NE(o.status().message().find("--cluster"), std::string::npos) << o.status().message();
  }
}

TEST_F(SettingsTest, FlagValueAfterSpaceOrEquals) {
  auto spaced = Parse({"--port", "8000", "--durability", "memory", "--flush-interval-ms", "25",
                       "--idle-timeout-s", "7", "--io-threads", "3"});
  ASSERT_OK(spaced);
  auto joined = Parse({"--port=8000", "--durability=memory", "--flush-interval-ms=25",
                       "--idle-timeout-s=7", "--io-threads=3"});
  ASSERT_OK(joined);
  for (const SkiffdOptions& o : {*spaced, *joined}) {
    EXPECT_EQ(o.port, 8000);
    EXPECT_EQ(o.durability, server::Durability::kMemory);
    EXPECT_EQ(o.flush_interval, milliseconds(25));
    EXPECT_EQ(o.idle_timeout, seconds(7));
    EXPECT_EQ(o.io_threads, 3u);
  }
  // A leading zero is decimal, not octal.
  auto zero = Parse({"--port=010"});
  ASSERT_OK(zero);
  EXPECT_EQ(zero->port, 10);
}

TEST_F(SettingsTest, EnvironmentVariables) {
  env_.Set("SKIFF_PORT", "9000");
  env_.Set("SKIFF_CLUSTER", "true");
  env_.Set("SKIFF_STORE_WAIT_S", "5");
  env_.Set("SKIFF_CLUSTER_SECRET", "from-the-environment");
  auto o = Parse({});
  ASSERT_OK(o);
  EXPECT_EQ(o->port, 9000);
  EXPECT_TRUE(o->cluster);
  EXPECT_EQ(o->store_wait, seconds(5));
  EXPECT_EQ(o->cluster_secret, "from-the-environment");
}

TEST_F(SettingsTest, TomlFile) {
  const std::string path = WriteConfig(
      "store = \"sqlite:/var/lib/skiff/skiff.db\"\n"
      "port = 7000\n"
      "durability = \"memory\"\n"
      "flush-interval-ms = 50\n"
      "cluster = true\n"
      "cluster-address = \"10.0.0.1:7420\"\n");
  auto o = Parse({"--config", path});
  ASSERT_OK(o);
  EXPECT_EQ(o->store_url, "sqlite:/var/lib/skiff/skiff.db");
  EXPECT_EQ(o->port, 7000);
  EXPECT_EQ(o->durability, server::Durability::kMemory);
  EXPECT_EQ(o->flush_interval, milliseconds(50));
  EXPECT_TRUE(o->cluster);
  EXPECT_EQ(o->cluster_address, "10.0.0.1:7420");
}

TEST_F(SettingsTest, FlagWinsOverVariableWhichWinsOverFile) {
  const std::string path = WriteConfig("port = 1000\nidle-timeout-s = 11\nmax-depth = 9\n");
  env_.Set("SKIFF_CONFIG", path);
  env_.Set("SKIFF_PORT", "2000");
  env_.Set("SKIFF_IDLE_TIMEOUT_S", "22");
  auto o = Parse({"--port=3000"});
  ASSERT_OK(o);
  EXPECT_EQ(o->port, 3000);                 // flag over variable and file
  EXPECT_EQ(o->idle_timeout, seconds(22));  // variable over file
  EXPECT_EQ(o->max_depth, 9u);              // file over the default
  // --config wins over SKIFF_CONFIG, as every flag over its variable.
  const std::string other = dir_.File("other.toml");
  std::ofstream(other) << "max-depth = 5\n";
  auto flagged = Parse({"--config", other});
  ASSERT_OK(flagged);
  EXPECT_EQ(flagged->max_depth, 5u);
}

TEST_F(SettingsTest, UnknownFlagSaysWhich) {
  auto o = Parse({"--bogus", "1"});
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().code(), StatusCode::kBadRequest);
  EXPECT_NE(o.status().message().find("--bogus"), std::string::npos) << o.status().message();
  EXPECT_FALSE(Parse({"stray"}).ok());
}

TEST_F(SettingsTest, BadValuesSayWhichFlagVariableOrKey) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--port", "70000"},
           {"--port", "x"},
           {"--port", "-1"},
           {"--port"},
           {"--durability", "fast"},
           {"--max-frame-bytes", "63"},
           {"--store-wait-s", "86401"},
           {"--cluster-address", "nocolon"},
           {"--idle-timeout-s", "1.5"},
       }) {
    auto o = Parse(args);
    ASSERT_FALSE(o.ok()) << ::testing::PrintToString(args);
    EXPECT_EQ(o.status().code(), StatusCode::kBadRequest);
    EXPECT_NE(o.status().message().find(args[0]), std::string::npos) << o.status().message();
  }
  env_.Set("SKIFF_MAX_DEPTH", "deep");
  auto from_env = Parse({});
  ASSERT_FALSE(from_env.ok());
  EXPECT_NE(from_env.status().message().find("SKIFF_MAX_DEPTH"), std::string::npos)
      << from_env.status().message();
}

TEST_F(SettingsTest, BadConfigFileSaysWhereAndWhy) {
  auto unknown = Parse({"--config", WriteConfig("prot = 7420\n")});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kBadRequest);
  EXPECT_NE(unknown.status().message().find("skiffd.toml: unknown setting 'prot'"),
            std::string::npos)
      << unknown.status().message();
  auto bad = Parse({"--config", WriteConfig("port = 70000\n")});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("skiffd.toml"), std::string::npos);
  EXPECT_NE(bad.status().message().find("port"), std::string::npos);
  EXPECT_FALSE(Parse({"--config", WriteConfig("port = [1]\n")}).ok());
  EXPECT_FALSE(Parse({"--config", WriteConfig("port = \n")}).ok());  // not TOML
  EXPECT_FALSE(Parse({"--config", WriteConfig("config = \"x.toml\"\n")}).ok());
  auto missing = Parse({"--config", dir_.File("missing.toml")});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kBadRequest);
  EXPECT_NE(missing.status().message().find("missing.toml"), std::string::npos);
}

TEST_F(SettingsTest, HelpListsEverySettingAndVariable) {
  SkiffdOptions options;
  auto invocation = ParseSkiffdCommandLine({"--help"}, options);
  ASSERT_OK(invocation);
  ASSERT_TRUE(invocation->help);
  CLI::App app;
  std::string config;
  AddSkiffdSettings(app, options, config);
  for (const CLI::Option* option : app.get_options()) {
    EXPECT_NE(invocation->help_text.find(option->get_name()), std::string::npos)
        << option->get_name();
    EXPECT_NE(invocation->help_text.find(option->get_envname()), std::string::npos)
        << option->get_envname();
  }
}

// docs/deploy.md's settings table must list what --help lists: every flag
// with its variable, in backquotes.
TEST_F(SettingsTest, DeployGuideListsEverySetting) {
  std::ifstream in(std::string(SKIFF_SOURCE_DIR) + "/docs/deploy.md");
  ASSERT_TRUE(in) << "docs/deploy.md";
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  CLI::App app;
  SkiffdOptions options;
  std::string config;
  AddSkiffdSettings(app, options, config);
  for (const CLI::Option* option : app.get_options()) {
    if (option->get_envname().empty()) continue;  // --help
    EXPECT_NE(doc.find("| `" + option->get_name()), std::string::npos)
        << option->get_name() << " is missing from docs/deploy.md";
    EXPECT_NE(doc.find("`" + option->get_envname() + "`"), std::string::npos)
        << option->get_envname() << " is missing from docs/deploy.md";
  }
}

}  // namespace
}  // namespace skiff::cmd
