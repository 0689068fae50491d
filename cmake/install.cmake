# `cmake --install` puts ember's headers, libraries, a CMake package and pkg-config files under
# the prefix (docs/install.md). The package has one exported-targets file per component, so
# that find_package(ember COMPONENTS ...) looks only for the dependencies of what it loads.
include(CMakePackageConfigHelpers)
include(GNUInstallDirs)
set(EMBER_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/ember)
set(EMBER_PKGCONFIG_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# Headers: every .h, .inc and .def under ember/ except the private ones below (included by
# ember's own .cpp files only). EMBER_PUBLIC_HEADERS (paths from the source root) is also
# the list whose examples tests/docs compiles.
set(EMBER_PRIVATE_HEADER_REGEX
  "^ember/(backends/cpu/(allocator|elementwise|gemm|kernels|simd|spatial|strided|vmath|wide)|backend/device_backend|train/(dashboard_layout|dashboard_paint|dashboard_plot|dashboard_state|terminal))\\.h$")
file(GLOB_RECURSE EMBER_PUBLIC_HEADERS RELATIVE ${PROJECT_SOURCE_DIR} CONFIGURE_DEPENDS
  ${PROJECT_SOURCE_DIR}/ember/*.h ${PROJECT_SOURCE_DIR}/ember/*.inc
  ${PROJECT_SOURCE_DIR}/ember/*.def)
list(FILTER EMBER_PUBLIC_HEADERS EXCLUDE REGEX "${EMBER_PRIVATE_HEADER_REGEX}")
list(SORT EMBER_PUBLIC_HEADERS)
foreach(header IN LISTS EMBER_PUBLIC_HEADERS)
  get_filename_component(dir ${header} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/${dir})
endforeach()

# Libraries and their exported targets, a file per component.
set(EMBER_COMPONENT_ember ember_core ember_cpu ember)
set(EMBER_COMPONENT_record ember_record)
set(EMBER_COMPONENT_nn ember_nn)
set(EMBER_COMPONENT_data ember_data)
set(EMBER_COMPONENT_train ember_train ember_curses)
foreach(component ember record nn data train)
  install(TARGETS ${EMBER_COMPONENT_${component}} EXPORT ember-${component}-targets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(EXPORT ember-${component}-targets NAMESPACE ember:: DESTINATION ${EMBER_CMAKE_DIR})
endforeach()

# ember-config.cmake and its version file. Before 1.0 a minor version may break the API.
if(EMBER_SHARED)
  set(EMBER_STATIC FALSE)
else()
  set(EMBER_STATIC TRUE)
endif()
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/ember-config.cmake.in
  ${PROJECT_BINARY_DIR}/ember-config.cmake INSTALL_DESTINATION ${EMBER_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ember-config-version.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ember-config.cmake
  ${PROJECT_BINARY_DIR}/ember-config-version.cmake DESTINATION ${EMBER_CMAKE_DIR})

# pkg-config: ember.pc (tensors, Dispatch, Autodiff, CPU) and ember-<component>.pc. A static
# library's own dependencies are listed as public ones, since every program links them.
file(RELATIVE_PATH EMBER_PC_PREFIX "/${EMBER_PKGCONFIG_DIR}" "/")
string(REGEX REPLACE "/$" "" EMBER_PC_PREFIX ${EMBER_PC_PREFIX})
function(ember_pkg_config name description requires libs private_requires private_libs)
  if(EMBER_STATIC)
    string(JOIN " " requires ${requires} ${private_requires})
    string(JOIN " " libs ${libs} ${private_libs})
    set(private_requires "")
    set(private_libs "")
  endif()
  set(PC_NAME ${name})
  set(PC_DESCRIPTION ${description})
  set(PC_REQUIRES ${requires})
  set(PC_LIBS ${libs})
  set(PC_REQUIRES_PRIVATE ${private_requires})
  set(PC_LIBS_PRIVATE ${private_libs})
  configure_file(${CMAKE_CURRENT_FUNCTION_LIST_DIR}/ember.pc.in ${PROJECT_BINARY_DIR}/pkgconfig/${name}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/${name}.pc DESTINATION ${EMBER_PKGCONFIG_DIR})
endfunction()
ember_pkg_config(ember "tensors, Dispatch, Autodiff and the CPU backend"
  "" "-L\${libdir} -lember -lember_cpu -lember_core" "" "-pthread")
ember_pkg_config(ember-record "safetensors files" "ember" "-L\${libdir} -lember_record" "" "")
ember_pkg_config(ember-nn "modules, layers, losses, optimizers and module records"
  "ember ember-record nlohmann_json" "" "" "")
ember_pkg_config(ember-data "datasets, readers and the DataLoader"
  "ember nlohmann_json" "-L\${libdir} -lember_data" "sqlite3 zlib" "")
# ncursesw as -l flags: its .pc file would add feature macros (_XOPEN_SOURCE) to users' builds.
set(EMBER_CURSES_FLAGS)
foreach(lib IN LISTS EMBER_CURSES_LIBRARIES)
  get_filename_component(lib ${lib} NAME_WE)
  string(REGEX REPLACE "^lib" "-l" lib ${lib})
  list(APPEND EMBER_CURSES_FLAGS ${lib})
endforeach()
list(JOIN EMBER_CURSES_FLAGS " " EMBER_CURSES_FLAGS)
ember_pkg_config(ember-train "metrics, the Learner, checkpoints, the dashboard and reports"
  "ember-nn" "-L\${libdir} -lember_train" "" "${EMBER_CURSES_FLAGS}")

install(FILES ${PROJECT_SOURCE_DIR}/LICENSE-MIT ${PROJECT_SOURCE_DIR}/LICENSE-APACHE
  DESTINATION ${CMAKE_INSTALL_DOCDIR})
