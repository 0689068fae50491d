# The doc_snippets test: builds the examples of the docs and public headers, then runs the
# program, which counts them.
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD} --target doc_snippets --parallel 2
  RESULT_VARIABLE built)
if(NOT built EQUAL 0)
  message(FATAL_ERROR "An example in the docs or a public header does not compile (the errors "
    "above name its file and line). Fix it, or give it hidden set-up code: a snippet-setup "
    "comment in Markdown, a section of tests/docs/setup.txt for a header, `skip` there for a "
    "comment that is not code (docs/testing.md).")
endif()
execute_process(COMMAND ${EXE} COMMAND_ERROR_IS_FATAL ANY)
