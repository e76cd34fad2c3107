// The container image's one executable: skiffd, or the skiff admin CLI when
// started under the name "skiff" (a symlink in the image), the way BusyBox
// picks its applet. One binary carries one copy of libstdc++, SQLite,
// libpq and OpenSSL instead of two, which is most of what keeps the image
// under 15 MB (docs/deploy.md). build.cmake compiles each program's
// sources with its main() renamed to the names below.
#include <cstring>

int SkiffdMain(int argc, char** argv);
int SkiffMain(int argc, char** argv);

int main(int argc, char** argv) {
  const char* name = argc > 0 ? argv[0] : "";
  if (const char* slash = std::strrchr(name, '/')) name = slash + 1;
  if (std::strcmp(name, "skiff") == 0) return SkiffMain(argc, argv);
  return SkiffdMain(argc, argv);
}
