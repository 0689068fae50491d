# `cmake --install` puts ember's headers, libraries, a CMake package and pkg-config files under
# the prefix (docs/install.md). Every library made with ember_library (ember/CMakeLists.txt)
# is part of the package: its component is its EMBER_COMPONENT property (its export name by
# default). What a component builds on (other components, and the packages behind imported
# targets such as SQLite::SQLite3) is read from the libraries' link interfaces, so the
# package's config and pkg-config files follow the CMakeLists without a second list.
include(CMakePackageConfigHelpers)
include(GNUInstallDirs)
set(EMBER_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/ember)
set(EMBER_PKGCONFIG_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(EMBER_SHARED)
  set(EMBER_STATIC FALSE)
else()
  set(EMBER_STATIC TRUE)
endif()

# Headers: every .h, .inc and .def under ember/ except the private ones below (included by
# ember's own .cpp files only). EMBER_PUBLIC_HEADERS (paths from the source root) is also
# the list whose examples tests/docs compiles.
set(EMBER_PRIVATE_HEADER_REGEX
  "^ember/(backends/cpu/(allocator|direct_conv|elementwise|flat_taps|gemm|int_conv|kernels|simd|spatial|strided|transpose16|vmath|vmath_wide|vnni|wide|winograd)|backends/cuda/(compile_jobs|cublaslt|cudnn|env|kernels|ops|queue|runtime)|backends/vulkan/(coopmat|gemm|vk)|backend/device_backend|backends/remote/(client|protocol|server|session)|distributed/(data_parallel|grad_sync|local_device|nccl|process_group)|kernel/codegen/(glsl_header|glsl_math)|record/(mapped_file|zip)|train/(dashboard_layout|dashboard_paint|dashboard_plot|dashboard_state|terminal))\\.h$")
file(GLOB_RECURSE EMBER_PUBLIC_HEADERS RELATIVE ${PROJECT_SOURCE_DIR} CONFIGURE_DEPENDS
  ${PROJECT_SOURCE_DIR}/ember/*.h ${PROJECT_SOURCE_DIR}/ember/*.inc
  ${PROJECT_SOURCE_DIR}/ember/*.def)
list(FILTER EMBER_PUBLIC_HEADERS EXCLUDE REGEX "${EMBER_PRIVATE_HEADER_REGEX}")
# ember::micro (the freestanding build, docs/embedded.md) is built from the source tree for a
# microcontroller; its headers are not part of the installed host library.
list(FILTER EMBER_PUBLIC_HEADERS EXCLUDE REGEX "^ember/micro/")
list(SORT EMBER_PUBLIC_HEADERS)
foreach(header IN LISTS EMBER_PUBLIC_HEADERS)
  get_filename_component(dir ${header} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/${dir})
endforeach()

# The package a namespaced imported target comes from (find_dependency's argument), and its
# pkg-config name or linker flags.
set(EMBER_PACKAGE_OF_Threads Threads)
set(EMBER_PACKAGE_OF_nlohmann_json nlohmann_json)
set(EMBER_PACKAGE_OF_SQLite SQLite3)
set(EMBER_PACKAGE_OF_ZLIB ZLIB)
set(EMBER_PACKAGE_OF_protobuf Protobuf)
set(EMBER_PACKAGE_OF_Vulkan Vulkan)
set(EMBER_PC_OF_Threads "-pthread")
set(EMBER_PC_OF_nlohmann_json "nlohmann_json")
set(EMBER_PC_OF_SQLite3 "sqlite3")
set(EMBER_PC_OF_ZLIB "zlib")
set(EMBER_PC_OF_Vulkan "vulkan")
# ncursesw as -l flags: its .pc file would add feature macros (_XOPEN_SOURCE) to users' builds.
set(EMBER_PC_OF_Curses)
foreach(lib IN LISTS EMBER_CURSES_LIBRARIES)
  get_filename_component(lib ${lib} NAME_WE)
  string(REGEX REPLACE "^lib" "-l" lib ${lib})
  list(APPEND EMBER_PC_OF_Curses ${lib})
endforeach()

# Components, in registration order, with their libraries.
get_property(EMBER_LIBRARIES GLOBAL PROPERTY EMBER_LIBRARIES)
set(EMBER_COMPONENTS)
foreach(target IN LISTS EMBER_LIBRARIES)
  get_target_property(component ${target} EMBER_COMPONENT)
  if(NOT component)
    get_target_property(component ${target} EXPORT_NAME)
  endif()
  set_target_properties(${target} PROPERTIES EMBER_COMPONENT ${component})
  if(NOT component IN_LIST EMBER_COMPONENTS)
    list(APPEND EMBER_COMPONENTS ${component})
  endif()
  list(APPEND EMBER_TARGETS_${component} ${target})
endforeach()

# A link that a program may opt out of, `$<$<condition>:target>` (ember's GPU backends, which
# a program with EMBER_CPU_ONLY does not link): a link to the target here, for the component
# graph and the pkg-config files, which link it always.
set(EMBER_CONDITIONAL_LINK "^\\$<\\$<.*>:([A-Za-z0-9_:]+)>$")

# The target a link entry names: without $<LINK_ONLY:...> or a condition around it, and an
# alias resolved to its real target.
function(ember_link_name out link)
  string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" link "${link}")
  string(REGEX REPLACE "${EMBER_CONDITIONAL_LINK}" "\\1" link "${link}")
  if(TARGET ${link})
    get_target_property(real ${link} ALIASED_TARGET)
    if(real)
      set(link ${real})
    endif()
  endif()
  set(${out} "${link}" PARENT_SCOPE)
endfunction()

# A component's libraries ordered so that each comes before the libraries it links (what a
# static link line needs: `ember` calls into `ember_cuda`, defined after it), by a depth-first
# walk of their link interfaces; EMBER_LINK_ORDER_<component> gets the result.
function(ember_link_visit component t)
  get_property(seen GLOBAL PROPERTY EMBER_LINK_SEEN)
  if(t IN_LIST seen)
    return()
  endif()
  set_property(GLOBAL APPEND PROPERTY EMBER_LINK_SEEN ${t})  # before its links: cycle-safe
  get_target_property(links ${t} INTERFACE_LINK_LIBRARIES)
  foreach(link IN LISTS links)
    ember_link_name(link "${link}")
    if(link IN_LIST EMBER_TARGETS_${component})
      ember_link_visit(${component} ${link})
    endif()
  endforeach()
  set_property(GLOBAL APPEND PROPERTY EMBER_LINK_POSTORDER ${t})  # after what it links
endfunction()
function(ember_link_order component)
  set_property(GLOBAL PROPERTY EMBER_LINK_SEEN "")
  set_property(GLOBAL PROPERTY EMBER_LINK_POSTORDER "")
  foreach(t IN LISTS EMBER_TARGETS_${component})
    ember_link_visit(${component} ${t})
  endforeach()
  get_property(order GLOBAL PROPERTY EMBER_LINK_POSTORDER)
  list(REVERSE order)  # dependents before what they link
  set(EMBER_LINK_ORDER_${component} ${order} PARENT_SCOPE)
endfunction()

# What each component needs: components (from links to ember libraries) and packages (from
# links to namespaced imported targets, and a library's EMBER_PACKAGE property), plus the
# pkg-config Requires and Libs. A static library's private links are in its link interface
# as $<LINK_ONLY:...>, so they count; a shared one's do not.
foreach(component IN LISTS EMBER_COMPONENTS)
  set(needs)
  set(packages)
  set(pc_libs)
  ember_link_order(${component})
  foreach(target IN LISTS EMBER_LINK_ORDER_${component})
    get_target_property(type ${target} TYPE)
    if(NOT type STREQUAL "INTERFACE_LIBRARY")
      get_target_property(output ${target} OUTPUT_NAME)
      if(NOT output)
        set(output ${target})
      endif()
      list(APPEND pc_libs "-l${output}")
    endif()
  endforeach()
  foreach(target IN LISTS EMBER_TARGETS_${component})
    get_target_property(package ${target} EMBER_PACKAGE)
    if(package)
      list(APPEND packages ${package})
    endif()
    # Linker flags of the target's link interface that pkg-config must say (EMBER_PC_LINK_FLAGS).
    get_target_property(flags ${target} EMBER_PC_LINK_FLAGS)
    if(flags)
      list(APPEND pc_libs ${flags})
    endif()
    get_target_property(links ${target} INTERFACE_LINK_LIBRARIES)
    if(NOT links)
      set(links)
    endif()
    foreach(link IN LISTS links)
      if(link MATCHES "^\\$<BUILD_INTERFACE:")
        continue()
      endif()
      ember_link_name(link "${link}")
      if(link IN_LIST EMBER_LIBRARIES)
        get_target_property(other ${link} EMBER_COMPONENT)
        if(NOT other STREQUAL component AND NOT other IN_LIST needs)
          list(APPEND needs ${other})
        endif()
      elseif(link MATCHES "^([A-Za-z0-9_]+)::")
        set(prefix ${CMAKE_MATCH_1})
        if(NOT DEFINED EMBER_PACKAGE_OF_${prefix})
          message(FATAL_ERROR "cmake/install.cmake: ${target} links ${link}: say which package "
            "provides ${prefix}:: targets (EMBER_PACKAGE_OF_${prefix}, EMBER_PC_OF_...)")
        endif()
        list(APPEND packages ${EMBER_PACKAGE_OF_${prefix}})
      elseif(link MATCHES "^(/.*/)?lib([A-Za-z0-9_+.-]+)\\.(so|a)[.0-9]*$")
        list(APPEND pc_libs "-l${CMAKE_MATCH_2}")
      elseif(link MATCHES "^[A-Za-z0-9_+.-]+$")
        list(APPEND pc_libs "-l${link}")
      endif()
    endforeach()
  endforeach()
  list(REMOVE_DUPLICATES packages)
  set(EMBER_NEEDS_${component} ${needs})
  set(EMBER_PACKAGES_${component} ${packages})
  set(EMBER_PC_LIBS_${component} ${pc_libs})
endforeach()

# Components ordered so that each comes after what it needs (the order the config loads them).
set(EMBER_ORDERED)
set(pending ${EMBER_COMPONENTS})
while(pending)
  set(progress FALSE)
  foreach(component IN LISTS pending)
    set(ready TRUE)
    foreach(need IN LISTS EMBER_NEEDS_${component})
      if(NOT need IN_LIST EMBER_ORDERED)
        set(ready FALSE)
      endif()
    endforeach()
    if(ready)
      list(APPEND EMBER_ORDERED ${component})
      list(REMOVE_ITEM pending ${component})
      set(progress TRUE)
    endif()
  endforeach()
  if(NOT progress)
    message(FATAL_ERROR "cmake/install.cmake: components need each other: ${pending}")
  endif()
endwhile()

# Libraries and their exported targets, a file per component; the table the config reads.
set(EMBER_COMPONENT_TABLE "set(_ember_components ${EMBER_ORDERED})\n")
foreach(component IN LISTS EMBER_ORDERED)
  install(TARGETS ${EMBER_TARGETS_${component}} EXPORT ember-${component}-targets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(EXPORT ember-${component}-targets NAMESPACE ember:: DESTINATION ${EMBER_CMAKE_DIR})
  set(names)
  foreach(target IN LISTS EMBER_TARGETS_${component})
    get_target_property(name ${target} EXPORT_NAME)
    list(APPEND names ${name})
  endforeach()
  string(APPEND EMBER_COMPONENT_TABLE
    "set(_ember_targets_${component} ${names})\n"
    "set(_ember_needs_${component} ${EMBER_NEEDS_${component}})\n"
    "set(_ember_packages_${component} ${EMBER_PACKAGES_${component}})\n")
endforeach()

# ember-config.cmake and its version file. Before 1.0 a minor version may break the API.
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/ember-config.cmake.in
  ${PROJECT_BINARY_DIR}/ember-config.cmake INSTALL_DESTINATION ${EMBER_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ember-config-version.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ember-config.cmake
  ${PROJECT_BINARY_DIR}/ember-config-version.cmake DESTINATION ${EMBER_CMAKE_DIR})

# pkg-config: ember.pc (the ember component: tensors, Dispatch, Autodiff, CPU) and
# ember-<component>.pc, relocatable (paths from the file's own folder).
file(RELATIVE_PATH EMBER_PC_PREFIX "/${EMBER_PKGCONFIG_DIR}" "/")
string(REGEX REPLACE "/$" "" EMBER_PC_PREFIX ${EMBER_PC_PREFIX})
foreach(component IN LISTS EMBER_ORDERED)
  if(component STREQUAL "ember")
    set(PC_NAME ember)
  else()
    set(PC_NAME ember-${component})
  endif()
  set(requires)
  foreach(need IN LISTS EMBER_NEEDS_${component})
    if(need STREQUAL "ember")
      list(APPEND requires ember)
    else()
      list(APPEND requires ember-${need})
    endif()
  endforeach()
  set(libs)
  if(EMBER_PC_LIBS_${component})
    set(libs "-L\${libdir}" ${EMBER_PC_LIBS_${component}})
  endif()
  foreach(package IN LISTS EMBER_PACKAGES_${component})
    foreach(item IN LISTS EMBER_PC_OF_${package})
      if(item MATCHES "^-")
        list(APPEND libs ${item})
      else()
        list(APPEND requires ${item})
      endif()
    endforeach()
  endforeach()
  list(JOIN requires " " PC_REQUIRES)
  list(JOIN libs " " PC_LIBS)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/ember.pc.in ${PROJECT_BINARY_DIR}/pkgconfig/${PC_NAME}.pc
    @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/${PC_NAME}.pc DESTINATION ${EMBER_PKGCONFIG_DIR})
endforeach()

install(FILES ${PROJECT_SOURCE_DIR}/LICENSE-MIT ${PROJECT_SOURCE_DIR}/LICENSE-APACHE
  DESTINATION ${CMAKE_INSTALL_DOCDIR})
