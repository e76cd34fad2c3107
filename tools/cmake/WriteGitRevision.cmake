# Writes OUT with the source tree's revision (`git describe --always --dirty`)
# as SKIFF_GIT_REVISION, touching the file only when the text changes so an
# unchanged tree rebuilds nothing. Run at every build: the revision in a
# benchmark's context is the one the binary was built from.
execute_process(COMMAND git -C "${SOURCE_DIR}" describe --always --dirty --abbrev=12
                OUTPUT_VARIABLE revision OUTPUT_STRIP_TRAILING_WHITESPACE
                RESULT_VARIABLE failed ERROR_QUIET)
if(failed OR revision STREQUAL "")
  set(revision "unknown")
endif()
set(text "#define SKIFF_GIT_REVISION \"${revision}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
