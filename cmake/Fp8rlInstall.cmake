# install(): the shared library, the public header, a CMake package
# (find_package(fp8rl) -> fp8rl::fp8rl) and a pkg-config file, and where MPI
# was found libfp8rl_mpi with its header (component mpi -> fp8rl::fp8rl_mpi);
# or, when scikit-build-core builds the Python wheel, the libraries alone.
if(SKBUILD)
  # One plain file inside the Python package, under the name its loader looks
  # for: wheels cannot hold the libfp8rl.so -> .so.0 -> .so.0.1.0 links, and
  # ctypes loads it by path. RUNPATH $ORIGIN lets it find libraries shipped
  # beside it; install(FILES) copies the build-tree file, so that file carries it.
  set_target_properties(fp8rl PROPERTIES BUILD_WITH_INSTALL_RPATH ON INSTALL_RPATH "$ORIGIN")
  install(FILES $<TARGET_FILE:fp8rl> DESTINATION fp8rl RENAME libfp8rl.so COMPONENT python_package)
  # The libraries the wheel ships: pyproject.toml's build target.
  add_custom_target(fp8rl_python_libraries)
  add_dependencies(fp8rl_python_libraries fp8rl)
  # libfp8rl_mpi where MPI was found (Communicator.from_mpi4py looks beside
  # libfp8rl.so). Its DT_NEEDED libfp8rl.so.<major> resolves to the
  # libfp8rl.so the package loaded first: the loader matches the SONAMEs of
  # loaded libraries.
  if(TARGET fp8rl_mpi)
    add_dependencies(fp8rl_python_libraries fp8rl_mpi)
    set_target_properties(fp8rl_mpi PROPERTIES BUILD_WITH_INSTALL_RPATH ON INSTALL_RPATH "$ORIGIN")
    install(FILES $<TARGET_FILE:fp8rl_mpi> DESTINATION fp8rl RENAME libfp8rl_mpi.so COMPONENT python_package)
  endif()
  return()
endif()

include(CMakePackageConfigHelpers)

install(TARGETS fp8rl EXPORT fp8rlTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/capi/include/fp8rl DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(FP8RL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/fp8rl)
install(EXPORT fp8rlTargets NAMESPACE fp8rl:: DESTINATION ${FP8RL_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/fp8rlConfig.cmake.in
  ${PROJECT_BINARY_DIR}/fp8rlConfig.cmake INSTALL_DESTINATION ${FP8RL_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/fp8rlConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/fp8rlConfig.cmake ${PROJECT_BINARY_DIR}/fp8rlConfigVersion.cmake
  DESTINATION ${FP8RL_CMAKE_DIR})

if(TARGET fp8rl_mpi)
  install(TARGETS fp8rl_mpi EXPORT fp8rlMpiTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(FILES ${PROJECT_SOURCE_DIR}/capi/mpi/include/fp8rl/fp8rl_mpi.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/fp8rl)
  install(EXPORT fp8rlMpiTargets NAMESPACE fp8rl:: DESTINATION ${FP8RL_CMAKE_DIR})
endif()

configure_file(${PROJECT_SOURCE_DIR}/cmake/fp8rl.pc.in ${PROJECT_BINARY_DIR}/fp8rl.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/fp8rl.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
