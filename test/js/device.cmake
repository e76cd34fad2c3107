# The TypeScript device (src/js/src/device): unit tests of its storages and
# replica (fake-indexeddb), integration against a real skiffd from Node, and
# the device in a real headless Chromium. Included from test/js's
# CMakeLists.txt after it defined js_dir and SKIFF_NODE.
add_test(NAME js_device_unit
  COMMAND "${SKIFF_NODE}" --test test/device_storage.test.mjs test/device_replica.test.mjs
          test/device_sync_messages.test.mjs test/device_loop.test.mjs
  WORKING_DIRECTORY "${js_dir}")
set_tests_properties(js_device_unit PROPERTIES LABELS unit TIMEOUT 120)

add_test(NAME js_device_integration
  COMMAND "${SKIFF_NODE}" --test test/device_integration.test.mjs
  WORKING_DIRECTORY "${js_dir}")
set_tests_properties(js_device_integration PROPERTIES
  LABELS integration TIMEOUT 300
  ENVIRONMENT "SKIFFD=$<TARGET_FILE:skiffd>;SKIFF=$<TARGET_FILE:skiff>")

# Debian's chromium (puppeteer-core downloads no browser).
find_program(SKIFF_CHROMIUM chromium)
if(SKIFF_CHROMIUM)
  add_test(NAME js_browser_device
    COMMAND "${SKIFF_NODE}" --test test/browser/device_browser.test.mjs
    WORKING_DIRECTORY "${js_dir}")
  set_tests_properties(js_browser_device PROPERTIES
    LABELS integration TIMEOUT 300
    ENVIRONMENT "SKIFFD=$<TARGET_FILE:skiffd>;SKIFF=$<TARGET_FILE:skiff>;CHROMIUM=${SKIFF_CHROMIUM}")
elseif("$ENV{CI}" STREQUAL "true")
  message(FATAL_ERROR "js_browser_device needs chromium (apt-get install chromium)")
else()
  message(WARNING "chromium not found: js_browser_device is left out")
endif()
