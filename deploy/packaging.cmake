# SPDX-License-Identifier: Apache-2.0
# What `cmake --install` installs, and the Debian packages `cpack -G DEB` makes of it
# (docs/operations.md, "Installing"). One component per package:
#
#   coordinator  fleetburn             bin/fleetburn (coordinator and command line), the docs,
#                                      example campaigns, client and serve configuration
#                                      examples, Slurm and Kubernetes examples,
#                                      fleetburn-serve.service
#   agent        fleetburn-agent       bin/fleetburn-agent, libexec/fleetburn/fleetburn-worker and
#                                      fleetburn-mpirank (built with MPI), the agent's
#                                      configuration example, fleetburn-agent.service
#   cuda         fleetburn-agent-cuda  libexec/fleetburn/fleetburn-worker-cuda, -mpirank-cuda
#   hip          fleetburn-agent-hip   libexec/fleetburn/fleetburn-worker-hip
#
# The GPU workers have packages of their own: one package needing both vendors' runtimes would
# pull ROCm onto NVIDIA nodes and the reverse, and the CUDA runtime usually comes from NVIDIA's
# repository or the driver's installer rather than from a Debian package.
# fleetburn-simfleet is test equipment (sim/, docs/simfleet.md): a simulated fleet for checking
# the diagnosis engine, not a program a fleet runs, so it is not installed.
# Configuration is installed as examples in share/fleetburn/examples; nothing is written to /etc,
# so an install or an upgrade never touches a site's configuration.

set(FB_SYSTEMD_UNITDIR "lib/systemd/system" CACHE STRING
    "systemd system units, relative to the install prefix (or absolute)")
set(FB_EXAMPLEDIR ${CMAKE_INSTALL_DATADIR}/fleetburn/examples)

# --- programs -------------------------------------------------------------------------------
install(TARGETS fleetburn RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT coordinator)
install(TARGETS fleetburn-agent RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT agent)
install(TARGETS fleetburn-worker RUNTIME DESTINATION ${FB_LIBEXEC_SUBDIR} COMPONENT agent)
if(TARGET fleetburn-mpirank)
  install(TARGETS fleetburn-mpirank RUNTIME DESTINATION ${FB_LIBEXEC_SUBDIR} COMPONENT agent)
endif()
set(FB_PACKAGE_COMPONENTS coordinator agent)
foreach(vendor cuda hip)
  foreach(prog fleetburn-worker-${vendor} fleetburn-mpirank-${vendor})
    if(TARGET ${prog})
      install(TARGETS ${prog} RUNTIME DESTINATION ${FB_LIBEXEC_SUBDIR} COMPONENT ${vendor})
      list(APPEND FB_PACKAGE_COMPONENTS ${vendor})
    endif()
  endforeach()
endforeach()
list(REMOVE_DUPLICATES FB_PACKAGE_COMPONENTS)

# --- documentation, examples ----------------------------------------------------------------
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT coordinator)
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT coordinator
        FILES_MATCHING PATTERN "*.md" PATTERN "*.png" PATTERN "*.svg" PATTERN "*.html")
# Every Debian package carries its licence as /usr/share/doc/PACKAGE/copyright (Apache-2.0, the
# LICENSE file).
install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/fleetburn RENAME copyright
        COMPONENT coordinator)
foreach(comp ${FB_PACKAGE_COMPONENTS})
  if(comp STREQUAL "coordinator")
    continue()
  endif()
  set(pkg fleetburn-agent)
  if(NOT comp STREQUAL "agent")
    set(pkg fleetburn-agent-${comp})
  endif()
  install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${pkg} RENAME copyright
          COMPONENT ${comp})
endforeach()
# Campaigns an operator runs as they are (sim-faults.yaml is fleetburn-simfleet's input).
install(FILES deploy/campaigns/local-memtest.yaml deploy/campaigns/gpu-node.yaml
              deploy/campaigns/demo-faults.yaml deploy/campaigns/sim-burnin.yaml
        DESTINATION ${CMAKE_INSTALL_DATADIR}/fleetburn/campaigns COMPONENT coordinator)
install(FILES deploy/config/client.conf deploy/config/fleetburn-serve.default
        DESTINATION ${FB_EXAMPLEDIR} COMPONENT coordinator)
install(FILES deploy/config/agent.conf DESTINATION ${FB_EXAMPLEDIR} COMPONENT agent)
foreach(dir slurm k8s container)
  if(IS_DIRECTORY ${PROJECT_SOURCE_DIR}/deploy/${dir})
    install(DIRECTORY deploy/${dir} DESTINATION ${FB_EXAMPLEDIR} COMPONENT coordinator
            USE_SOURCE_PERMISSIONS)
  endif()
endforeach()

# --- systemd units --------------------------------------------------------------------------
# The units name the programs by absolute path, and the prefix is known only when installing
# (cmake --install --prefix, and cpack, which installs into /usr): they are filled in then.
foreach(unit agent serve)
  set(comp agent)
  if(unit STREQUAL "serve")
    set(comp coordinator)
  endif()
  install(CODE "
    set(prefix \"\${CMAKE_INSTALL_PREFIX}\")
    foreach(pair BINDIR:${CMAKE_INSTALL_BINDIR} DOCDIR:${CMAKE_INSTALL_DOCDIR}
                 EXAMPLEDIR:${FB_EXAMPLEDIR} UNITDIR:${FB_SYSTEMD_UNITDIR})
      string(REPLACE \":\" \";\" pair \"\${pair}\")
      list(GET pair 0 name)
      list(GET pair 1 dir)
      if(IS_ABSOLUTE \"\${dir}\")
        set(FB_\${name} \"\${dir}\")
      else()
        set(FB_\${name} \"\${prefix}/\${dir}\")
      endif()
    endforeach()
    # One directory per destination: installs into two prefixes at once (cpack, a test) must
    # not fill in each other's unit.
    string(MD5 dest \"\$ENV{DESTDIR}\${prefix}\")
    set(unit \"${PROJECT_BINARY_DIR}/deploy/units-\${dest}/fleetburn-${unit}.service\")
    configure_file(\"${PROJECT_SOURCE_DIR}/deploy/systemd/fleetburn-${unit}.service.in\"
                   \"\${unit}\" @ONLY)
    file(INSTALL \"\${unit}\" DESTINATION \"\${FB_UNITDIR}\")
  " COMPONENT ${comp})
endforeach()

# --- Debian packages (cpack -G DEB in the build directory) ----------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME fleetburn)
set(CPACK_PACKAGE_VENDOR "fleetburn")
set(FB_PACKAGE_CONTACT "fleetburn maintainers <fleetburn@localhost>" CACHE STRING
    "Maintainer field of the Debian packages")
set(CPACK_PACKAGE_CONTACT "${FB_PACKAGE_CONTACT}")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_COMPONENTS_ALL ${FB_PACKAGE_COMPONENTS})
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# Dependencies are the Debian packages of the shared libraries each program links
# (dpkg-shlibdeps): libzmq5, libuv1, libsqlite3-0, libyaml-0-2, libprotobuf-c1, libcurl4,
# libsystemd0, libopenmpi3 ... whatever this build linked.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(FB_DEB_VERSION "${PROJECT_VERSION}-${CPACK_DEBIAN_PACKAGE_RELEASE}")

set(CPACK_DEBIAN_COORDINATOR_PACKAGE_NAME fleetburn)
set(CPACK_DEBIAN_COORDINATOR_DESCRIPTION "burn-in and diagnosis of GPU clusters: coordinator and command line
fleetburn runs staged stress campaigns (host memory, GPU burn, HBM, peer-to-peer,
all-reduce, RDMA and TCP bandwidth) on fleetburn agents, records every event in
SQLite and names the bad node, DIMM, GPU, NIC or cable with its evidence.
`fleetburn run --local N` also needs the fleetburn-agent package.")
set(CPACK_DEBIAN_COORDINATOR_PACKAGE_RECOMMENDS "fleetburn-agent (= ${FB_DEB_VERSION})")
set(FB_DEB_SCRIPTS ${PROJECT_SOURCE_DIR}/deploy/debian)
set(CPACK_DEBIAN_COORDINATOR_PACKAGE_CONTROL_EXTRA ${FB_DEB_SCRIPTS}/fleetburn/postinst
    ${FB_DEB_SCRIPTS}/fleetburn/prerm ${FB_DEB_SCRIPTS}/fleetburn/postrm)

set(CPACK_DEBIAN_AGENT_PACKAGE_NAME fleetburn-agent)
set(CPACK_DEBIAN_AGENT_DESCRIPTION "burn-in and diagnosis of GPU clusters: the agent of every node
fleetburn-agent registers a node with a fleetburn coordinator and runs its workloads
(memtest, health, netbw, rdmabw, allreduce on CPUs) in child processes. GPU workloads
need fleetburn-agent-cuda or fleetburn-agent-hip.")
set(CPACK_DEBIAN_AGENT_PACKAGE_SUGGESTS "fleetburn-agent-cuda, fleetburn-agent-hip, openmpi-bin")
set(CPACK_DEBIAN_AGENT_PACKAGE_CONTROL_EXTRA ${FB_DEB_SCRIPTS}/fleetburn-agent/postinst
    ${FB_DEB_SCRIPTS}/fleetburn-agent/prerm ${FB_DEB_SCRIPTS}/fleetburn-agent/postrm)

set(CPACK_DEBIAN_CUDA_PACKAGE_NAME fleetburn-agent-cuda)
set(CPACK_DEBIAN_CUDA_DESCRIPTION "burn-in and diagnosis of GPU clusters: the agent's NVIDIA GPU workloads
fleetburn-worker-cuda (gpuburn, gpumemtest, p2p, allreduce on GPUs) and
fleetburn-mpirank-cuda. Needs the NVIDIA driver and the CUDA runtime libraries
this was built with (libcudart, libcublas) on the library path.")
# The CUDA runtime is NVIDIA's, rarely a Debian package: no dependencies computed for it.
set(CPACK_DEBIAN_CUDA_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_CUDA_PACKAGE_DEPENDS "fleetburn-agent (= ${FB_DEB_VERSION})")

set(CPACK_DEBIAN_HIP_PACKAGE_NAME fleetburn-agent-hip)
set(CPACK_DEBIAN_HIP_DESCRIPTION "burn-in and diagnosis of GPU clusters: the agent's AMD GPU workloads
fleetburn-worker-hip (gpuburn, gpumemtest, p2p, allreduce on GPUs), built with HIP.")
set(CPACK_DEBIAN_HIP_PACKAGE_DEPENDS "fleetburn-agent (= ${FB_DEB_VERSION})")

include(CPack)
