# Checks that an object file uses, but does not define, what the library instantiates for the
# Dispatch stacks: -DNM=<nm> -DOBJECT=<object file>.
execute_process(COMMAND ${NM} -C ${OBJECT} OUTPUT_VARIABLE syms RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nm failed on ${OBJECT}")
endif()
string(REPLACE "\n" ";" lines "${syms}")
set(AD "ember::Autodiff<ember::Dispatch>")
set(patterns
  "ember::optim::Optimizer<ember::optim::Adam<${AD} >, ${AD} >::step("
  "ember::optim::Optimizer<ember::optim::Adam<${AD} >, ${AD} >::to_record("
  "ember::optim::Optimizer<ember::optim::Adam<${AD} >, ${AD} >::load_record("
  "ember::optim::Optimizer<ember::optim::Sgd<${AD} >, ${AD} >::step("
  "ember::optim::GradientsParams<${AD} >::from_grads("
  "ember::nn::Linear<${AD} >::forward<2>("
  "ember::nn::Linear<ember::Dispatch>::forward<2>("
  "ember::nn::LinearConfig::init<${AD} >("
  "ember::nn::Initializer::init<"
  "ember::nn::CrossEntropyLoss::forward<${AD}, 2>("
  "ember::nn::MseLoss::forward<${AD}, 2>("
  "ember::nn::Param<ember::Tensor<${AD}, 2, ember::Float> >::set("
  "ember::data::DataLoader<ember::data::MnistDataset, ember::data::MnistBatcher<${AD} > >::next("
  "ember::data::DataLoader<ember::data::MnistDataset, ember::data::MnistBatcher<ember::Dispatch> >::next("
  "ember::train::ClassificationOutput<${AD} >::metric_input(")
set(problems "")
foreach(p IN LISTS patterns)
  set(used FALSE)
  foreach(line IN LISTS lines)
    string(FIND "${line}" "${p}" at)
    if(at EQUAL -1)
      continue()
    endif()
    if(line MATCHES "^ +U ")
      set(used TRUE)
    else()
      string(APPEND problems "\n  defined here, not taken from the library: ${line}")
    endif()
  endforeach()
  if(NOT used)
    string(APPEND problems "\n  not used (the test no longer covers it): ${p}")
  endif()
endforeach()
if(problems)
  message(FATAL_ERROR "check_extern: ${OBJECT}${problems}")
endif()
list(LENGTH patterns n)
message(STATUS "check_extern: all ${n} instantiations come from the library")
