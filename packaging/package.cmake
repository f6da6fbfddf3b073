# Installation layout and the Debian package (`cpack -G DEB` in a Release build; the test
# `package_deb` builds and unpacks it, scripts/package.sh builds it):
#   /usr/bin/colo, /usr/bin/colod
#   /usr/lib/colo/colo-fake-job, libcolo-fake-{nvml,dcgm}.so.1   (colod --fake-gpus: demos, tests)
#   /usr/share/colo/{web,models,calibration,python,data}   (found by src/common/resource_path.h
#                                                            beside the binary: ../share/colo)
#   /lib/systemd/system/colod.service, /etc/colo/colod.toml (a conffile)
#   /usr/share/doc/colo/  (README, docs, data provenance and licences)
#   /usr/share/man/man1/colo.1.gz, man8/colod.8.gz  (help2man, from the programs' --help)
include(GNUInstallDirs)

install(TARGETS colo colod RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET colo-fake-job)
  install(TARGETS colo-fake-job RUNTIME DESTINATION ${CMAKE_INSTALL_LIBDIR}/colo)
  install(TARGETS colo_fake_nvml colo_fake_dcgm LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/colo NAMELINK_SKIP)
endif()

set(colo_share ${CMAKE_INSTALL_DATADIR}/colo)
foreach(dir web models calibration python slurm)
  if(EXISTS ${PROJECT_SOURCE_DIR}/${dir})
    install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/ DESTINATION ${colo_share}/${dir}
            PATTERN "__pycache__" EXCLUDE PATTERN "*.pyc" EXCLUDE)
  endif()
endforeach()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/data/gpumemnet DESTINATION ${colo_share}/data)
install(FILES ${PROJECT_SOURCE_DIR}/data/README.md ${PROJECT_SOURCE_DIR}/data/SHA256SUMS DESTINATION ${colo_share}/data)
# The CARMA evaluation inputs carry non-commercial terms (data/README.md): a distributor who
# cannot accept them builds with -DCOLO_INSTALL_CARMA_DATA=OFF.
option(COLO_INSTALL_CARMA_DATA "install data/carma (CARMA's non-commercial academic terms)" ON)
if(COLO_INSTALL_CARMA_DATA)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/data/carma DESTINATION ${colo_share}/data)
endif()

install(FILES ${PROJECT_SOURCE_DIR}/packaging/colod.service ${PROJECT_SOURCE_DIR}/packaging/colo-slurm-recover.service
        ${PROJECT_SOURCE_DIR}/packaging/colo-slurm-node-weight.service
        DESTINATION /lib/systemd/system)
install(FILES ${PROJECT_SOURCE_DIR}/packaging/colod.toml DESTINATION /etc/colo)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})

# Manual pages made from the programs' own --help and --version by help2man (install-deps.sh),
# plus packaging/man/*.h2m: they cannot drift from the options the binaries accept.
find_program(HELP2MAN help2man)
if(HELP2MAN AND TARGET colo AND TARGET colod)
  set(colo_man_dir ${PROJECT_BINARY_DIR}/man)
  function(colo_man_page prog section name)
    set(page ${colo_man_dir}/${prog}.${section})
    add_custom_command(OUTPUT ${page}.gz
                       COMMAND ${CMAKE_COMMAND} -E make_directory ${colo_man_dir}
                       COMMAND ${HELP2MAN} --no-info --no-discard-stderr --section ${section} --name ${name}
                               --include ${PROJECT_SOURCE_DIR}/packaging/man/${prog}.h2m --output ${page}
                               $<TARGET_FILE:${prog}>
                       COMMAND gzip -9nf ${page}
                       DEPENDS ${prog} ${PROJECT_SOURCE_DIR}/packaging/man/${prog}.h2m VERBATIM)
    install(FILES ${page}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man${section})
  endfunction()
  colo_man_page(colo 1 "collocation-aware GPU resource manager for deep-learning training")
  colo_man_page(colod 8 "the colo daemon: GPU sharing, job queue and out-of-memory recovery")
  add_custom_target(colo_man ALL DEPENDS ${colo_man_dir}/colo.1.gz ${colo_man_dir}/colod.8.gz)
else()
  message(STATUS "help2man not found: no manual pages (scripts/install-deps.sh installs it)")
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR})

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME colo)
set(CPACK_PACKAGE_VENDOR "colo")
set(CPACK_PACKAGE_CONTACT "colo maintainers <colo@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "collocation-aware GPU resource manager for deep-learning training")
set(CPACK_PACKAGE_DESCRIPTION
    "colo predicts each training job's GPU memory before it runs, packs jobs onto shared GPUs (streams, MPS, MIG) when memory and SM activity allow, watches the GPUs, recovers jobs that crash out of memory, and replays traces in a simulator through the same scheduler core.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # libc, libstdc++, libsqlite3, libfmt, toml++ from the binaries
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3-torch, python3-torchvision")  # colo submit --probe
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "prometheus")
# Maintainer scripts: colod's unit enabled, started, restarted on upgrade, stopped on removal
# (packaging/debian/*; they replace CPack's own, which only ran ldconfig for /usr/lib/colo, a
# directory ldconfig does not read).
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/packaging/debian/conffiles
    ${PROJECT_SOURCE_DIR}/packaging/debian/postinst ${PROJECT_SOURCE_DIR}/packaging/debian/prerm
    ${PROJECT_SOURCE_DIR}/packaging/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_STRIP_FILES ON)
include(CPack)
