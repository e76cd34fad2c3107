# Compiler warnings and sanitizers shared by every Skiff target.
add_library(skiff_options INTERFACE)
add_library(skiff::options ALIAS skiff_options)
target_compile_options(skiff_options INTERFACE -Wall -Wextra -Wpedantic -Wshadow
                                               -Wnon-virtual-dtor -Wimplicit-fallthrough)
if(SKIFF_WERROR)
  target_compile_options(skiff_options INTERFACE -Werror)
endif()
if(SKIFF_SANITIZE STREQUAL "address")
  target_compile_options(skiff_options INTERFACE -fsanitize=address,undefined
                                                 -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(skiff_options INTERFACE -fsanitize=address,undefined)
elseif(SKIFF_SANITIZE STREQUAL "thread")
  target_compile_options(skiff_options INTERFACE -fsanitize=thread -fno-omit-frame-pointer)
  target_link_options(skiff_options INTERFACE -fsanitize=thread)
elseif(NOT SKIFF_SANITIZE STREQUAL "")
  message(FATAL_ERROR "SKIFF_SANITIZE must be address, thread or empty, not '${SKIFF_SANITIZE}'")
endif()
