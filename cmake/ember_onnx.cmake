# ember_import_onnx(TARGET MODEL.onnx [NAME name] [EMBED]): at build time, ember-onnx import
# writes MODEL as a C++ module (NAME.h, NAME.cpp; docs/onnx.md) into the build folder, and
# TARGET compiles it, includes its header and links ember::onnx. Without EMBED the weights
# are NAME.safetensors beside the header (the target property EMBER_ONNX_WEIGHTS lists the
# paths); with EMBED they are compiled in and NAME::Model<B>::load(device) needs no file.
#
#   ember_import_onnx(my_app ${CMAKE_CURRENT_SOURCE_DIR}/mnist.onnx NAME mnist EMBED)
#   // main.cpp: #include "mnist.h"   auto m = mnist::Model<ember::Dispatch>::load();
function(ember_import_onnx target model)
  cmake_parse_arguments(ARG "EMBED" "NAME" "" ${ARGN})
  get_filename_component(stem "${model}" NAME_WE)
  if(ARG_NAME)
    set(stem ${ARG_NAME})
  endif()
  set(out ${CMAKE_CURRENT_BINARY_DIR}/ember_onnx/${stem})
  set(flags --name ${stem})
  set(outputs ${out}/${stem}.h ${out}/${stem}.cpp)
  if(ARG_EMBED)
    list(APPEND flags --embed)
  else()
    list(APPEND outputs ${out}/${stem}.safetensors)
    set_property(TARGET ${target} APPEND PROPERTY EMBER_ONNX_WEIGHTS ${out}/${stem}.safetensors)
  endif()
  add_custom_command(OUTPUT ${outputs}
    COMMAND ember-onnx import "${model}" "${out}" ${flags}
    DEPENDS "${model}" ember-onnx
    COMMENT "ember-onnx import ${model}")
  target_sources(${target} PRIVATE ${out}/${stem}.cpp)
  target_include_directories(${target} PRIVATE ${out})
  target_link_libraries(${target} PRIVATE ember::onnx)
endfunction()
