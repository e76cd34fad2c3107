# Helpers that every CMakeLists.txt in the tree uses to declare its targets, so
# warnings, include roots, labels and the header check stay uniform.

set_property(GLOBAL PROPERTY SKIFF_PUBLIC_HEADERS "")

# skiff_add_library(NAME SOURCES ... [HEADERS ...] [DEPS ...] [PRIVATE_DEPS ...])
# Creates skiff_NAME with the alias skiff::NAME. HEADERS are the public headers
# of the layer; each is compiled on its own by the header check.
function(skiff_add_library name)
  cmake_parse_arguments(arg "" "" "SOURCES;HEADERS;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(skiff_${name} ${arg_SOURCES} ${arg_HEADERS})
  add_library(skiff::${name} ALIAS skiff_${name})
  target_include_directories(skiff_${name} PUBLIC "${PROJECT_SOURCE_DIR}/src")
  target_link_libraries(skiff_${name} PUBLIC ${arg_DEPS} PRIVATE skiff::options ${arg_PRIVATE_DEPS})
  foreach(header IN LISTS arg_HEADERS)
    set_property(GLOBAL APPEND PROPERTY SKIFF_PUBLIC_HEADERS
                 "${CMAKE_CURRENT_SOURCE_DIR}/${header}|skiff_${name}")
  endforeach()
endfunction()

# skiff_add_test(NAME LABELS ... SOURCES ... [DEPS ...] [TIMEOUT s])
# One gtest executable registered as one ctest test carrying LABELS
# (unit, integration or bench).
function(skiff_add_test name)
  cmake_parse_arguments(arg "" "TIMEOUT" "LABELS;SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${arg_SOURCES})
  target_link_libraries(${name} PRIVATE ${arg_DEPS} GTest::gtest GTest::gmock skiff::options)
  target_include_directories(${name} PRIVATE "${PROJECT_SOURCE_DIR}/src" "${PROJECT_SOURCE_DIR}")
  add_test(NAME ${name} COMMAND ${name} --gtest_color=no)
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT 300)
  endif()
  set_tests_properties(${name} PROPERTIES LABELS "${arg_LABELS}" TIMEOUT ${arg_TIMEOUT})
  if(SKIFF_SANITIZE STREQUAL "address")
    set_property(TEST ${name} APPEND PROPERTY ENVIRONMENT
                 "LSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tools/sanitizers/lsan.supp")
  endif()
endfunction()

# Compiles every registered public header alone in its own translation unit, so
# a header that forgets an include fails the build (Seastar's checkheaders).
function(skiff_add_header_check)
  get_property(entries GLOBAL PROPERTY SKIFF_PUBLIC_HEADERS)
  set(sources "")
  set(deps "")
  foreach(entry IN LISTS entries)
    string(REPLACE "|" ";" parts "${entry}")
    list(GET parts 0 header)
    list(GET parts 1 target)
    file(RELATIVE_PATH rel "${PROJECT_SOURCE_DIR}" "${header}")
    string(MAKE_C_IDENTIFIER "${rel}" id)
    set(tu "${PROJECT_BINARY_DIR}/header_check/${id}.cc")
    file(GENERATE OUTPUT "${tu}" CONTENT "#include \"${header}\"\n")
    list(APPEND sources "${tu}")
    list(APPEND deps ${target})
  endforeach()
  if(sources)
    list(REMOVE_DUPLICATES deps)
    add_library(skiff_header_check OBJECT ${sources})
    target_link_libraries(skiff_header_check PRIVATE ${deps} skiff::options)
    # Only whether each header compiles alone counts, and nothing links these
    # objects: no optimisation and no debug info (a header heavy with inline
    # code, such as src/cmd/settings.h, checks in about 60 % of the time).
    target_compile_options(skiff_header_check PRIVATE -O0 -g0)
  endif()
endfunction()
