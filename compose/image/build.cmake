# How the container image's executable is built and linked. compose/Dockerfile
# passes this file as CMAKE_PROJECT_INCLUDE, so it runs right after the
# top-level project() and no CMakeLists.txt of the tree changes for the image.
# docs/deploy.md has the sizes each choice was measured at.
#
# The image is FROM scratch and holds exactly the shared libraries its binary
# needs, so every library linked statically here is one less file in it:
#   - Debian's .a archives where Debian ships one (SQLite, libsodium, zstd,
#     libpqxx, libpq, OpenSSL, Abseil), plus libstdc++ and libgcc;
#   - toml++ header-only (Debian's libtomlplusplus.so would bring
#     libstdc++.so back);
#   - skiffd and the skiff CLI as one executable (skiff_image, see
#     multicall_main.cc), so the two share one copy of all of the above.
# glibc stays shared: a static glibc cannot resolve host names (NSS).
#
# Settings (cache variables), each measured in docs/deploy.md:
#   SKIFF_IMAGE_STATIC          ON: the static links above; OFF: Debian's
#                               shared libraries (libpq's whole chain).
#   SKIFF_IMAGE_STATIC_OPENSSL  ON: libssl.a and libcrypto.a; OFF: Debian's
#                               libssl.so.3 and libcrypto.so.3.
#   SKIFF_IMAGE_KERBEROS_LDAP   OFF: libpq without Kerberos and LDAP
#                               (no_kerberos_ldap.cc); ON: Debian's shared
#                               GSSAPI and LDAP libraries, and both work.
#   SKIFF_IMAGE_GC_SECTIONS     ON: unused functions and data dropped.
#   SKIFF_IMAGE_PACK_RELOCS     ON: the position-independent executable's
#                               relative relocations packed (DT_RELR, glibc
#                               2.36), 0.6 MB of them in 7 KB.
#   SKIFF_IMAGE_PG_LIBDIR       where libpgcommon_shlib.a and libpgport_shlib.a
#                               are (Debian's postgresql-server-dev-NN);
#                               libpq.a needs them.
include_guard(GLOBAL)

option(SKIFF_IMAGE_STATIC "Link the image's executable with Debian's static libraries" ON)
option(SKIFF_IMAGE_STATIC_OPENSSL "Link OpenSSL statically" ON)
option(SKIFF_IMAGE_KERBEROS_LDAP "Keep libpq's Kerberos and LDAP (Debian's shared libraries)" OFF)
option(SKIFF_IMAGE_GC_SECTIONS "Drop unused functions and data at link time" ON)
option(SKIFF_IMAGE_PACK_RELOCS "Pack relative relocations (DT_RELR)" ON)
set(SKIFF_IMAGE_PG_LIBDIR "" CACHE PATH "Directory of libpgcommon_shlib.a and libpgport_shlib.a")

if(SKIFF_IMAGE_GC_SECTIONS)
  add_compile_options(-ffunction-sections -fdata-sections)
  add_link_options(-Wl,--gc-sections)
endif()
add_link_options(-Wl,--as-needed)
if(SKIFF_IMAGE_PACK_RELOCS)
  add_link_options(-Wl,-z,pack-relative-relocs)
endif()

if(SKIFF_IMAGE_STATIC)
  # find_library (and pkg-config's imported targets, which use it) picks the
  # .a where both exist.
  set(CMAKE_FIND_LIBRARY_SUFFIXES .a .so)
  add_link_options(-static-libstdc++ -static-libgcc)
endif()

# Defined before src/cmd looks for toml++: Debian's config file keeps a
# tomlplusplus::tomlplusplus target that already exists.
add_library(tomlplusplus::tomlplusplus INTERFACE IMPORTED GLOBAL)
target_compile_definitions(tomlplusplus::tomlplusplus INTERFACE TOML_HEADER_ONLY=1)

# libpqxx.a names no libraries of its own (libpqxx.so carries libpq.so as a
# dependency), so libpq.a and what it needs are added to libpqxx's target.
# Debian builds libpq with Kerberos (GSSAPI) and LDAP, which have no static
# libraries and bring 19 shared ones (GnuTLS among them, 8.8 MB); the image
# links libpq against no_kerberos_ldap.cc instead, which reports both as
# unavailable.
function(_skiff_image_link_libpq)
  find_library(SKIFF_IMAGE_LIBPQ NAMES pq REQUIRED)
  find_library(SKIFF_IMAGE_PGCOMMON NAMES pgcommon_shlib PATHS "${SKIFF_IMAGE_PG_LIBDIR}"
               NO_DEFAULT_PATH REQUIRED)
  find_library(SKIFF_IMAGE_PGPORT NAMES pgport_shlib PATHS "${SKIFF_IMAGE_PG_LIBDIR}"
               NO_DEFAULT_PATH REQUIRED)
  set(OPENSSL_USE_STATIC_LIBS ${SKIFF_IMAGE_STATIC_OPENSSL})
  if(NOT SKIFF_IMAGE_STATIC_OPENSSL)
    set(CMAKE_FIND_LIBRARY_SUFFIXES .so)  # this function's copy only
  endif()
  find_package(OpenSSL 3 REQUIRED)
  if(SKIFF_IMAGE_KERBEROS_LDAP)
    set(kerberos_ldap -l:libgssapi_krb5.so.2 -l:libldap-2.5.so.0)
  else()
    add_library(skiff_image_no_kerberos_ldap STATIC
                "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/no_kerberos_ldap.cc")
    set(kerberos_ldap skiff_image_no_kerberos_ldap)
  endif()
  set_property(TARGET PkgConfig::PQXX APPEND PROPERTY INTERFACE_LINK_LIBRARIES
               "${SKIFF_IMAGE_LIBPQ}" "${SKIFF_IMAGE_PGCOMMON}" "${SKIFF_IMAGE_PGPORT}"
               OpenSSL::SSL OpenSSL::Crypto ${kerberos_ldap})
endfunction()

# Debian's Abseil package imports its shared libraries only, with each
# one's .a beside it: the targets are pointed at the archives instead.
function(_skiff_image_link_absl)
  get_directory_property(targets DIRECTORY "${PROJECT_SOURCE_DIR}" IMPORTED_TARGETS)
  list(FILTER targets INCLUDE REGEX "^absl::")
  foreach(target IN LISTS targets)
    get_target_property(type ${target} TYPE)
    if(NOT type STREQUAL "SHARED_LIBRARY")
      continue()
    endif()
    get_target_property(configurations ${target} IMPORTED_CONFIGURATIONS)
    foreach(configuration IN LISTS configurations)
      get_target_property(location ${target} IMPORTED_LOCATION_${configuration})
      string(REGEX REPLACE "\\.so[.0-9]*$" ".a" archive "${location}")
      if(NOT EXISTS "${archive}")
        message(FATAL_ERROR "no static archive for ${target} (${location})")
      endif()
      set_target_properties(${target} PROPERTIES IMPORTED_LOCATION_${configuration} "${archive}")
    endforeach()
  endforeach()
endfunction()

# skiff_image: the sources of skiffd and of skiff, each compiled with its
# main() renamed, and multicall_main.cc choosing one by the name it was
# started under. Read from the real targets, so a source added to either
# needs nothing here.
function(_skiff_image_add_multicall)
  if(SKIFF_IMAGE_STATIC)
    _skiff_image_link_libpq()
    _skiff_image_link_absl()
  endif()
  # Imported targets found in a subdirectory (src/cmd finds CLI11) are not
  # seen from here, where this deferred call runs.
  find_package(CLI11 2 CONFIG REQUIRED)
  set(link_libraries "")
  set(entry_skiffd SkiffdMain)
  set(entry_skiff SkiffMain)
  foreach(role IN ITEMS skiffd skiff)
    get_target_property(dir ${role} SOURCE_DIR)
    get_target_property(sources ${role} SOURCES)
    list(TRANSFORM sources PREPEND "${dir}/")
    add_library(skiff_image_${role} OBJECT ${sources})
    foreach(property IN ITEMS COMPILE_DEFINITIONS COMPILE_OPTIONS INCLUDE_DIRECTORIES
                              LINK_LIBRARIES)
      get_target_property(value ${role} ${property})
      if(value)
        set_property(TARGET skiff_image_${role} PROPERTY ${property} "${value}")
      endif()
    endforeach()
    target_compile_definitions(skiff_image_${role} PRIVATE main=${entry_${role}})
    get_target_property(value ${role} LINK_LIBRARIES)
    list(APPEND link_libraries ${value})
  endforeach()
  add_executable(skiff_image "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/multicall_main.cc")
  target_link_libraries(skiff_image PRIVATE skiff_image_skiffd skiff_image_skiff ${link_libraries})
endfunction()
cmake_language(DEFER CALL _skiff_image_add_multicall)
