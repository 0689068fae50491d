# Compiles SRC and passes only if the compiler fails with a message matching EXPECT.
execute_process(COMMAND ${CXX} -std=c++20 -fsyntax-only -I${INC} ${SRC}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "${SRC} compiled, but it must not")
endif()
if(NOT err MATCHES "${EXPECT}")
  message(FATAL_ERROR "${SRC} failed for another reason:\n${err}")
endif()
message(STATUS "failed to compile, as expected: ${EXPECT}")
