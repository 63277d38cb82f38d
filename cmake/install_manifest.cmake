# install_manifest.json, read for CMake (string(JSON): CMake >= 3.19). setup.py reads the same file,
# so both builds install the same executables and share/quirobot files from one list.
#
# quirobot_install_manifest(ROOT) sets, in the caller's scope:
#   QUIROBOT_PYTHON_PACKAGES  the Python packages (folders under ROOT)
#   QUIROBOT_EXECUTABLES      "name=module:function" per console script
#   QUIROBOT_C_EXTENSIONS     "module=source" per optional C extension module
#   QUIROBOT_C_FLAGS          the compile options of the C extensions
#   QUIROBOT_SHARE_FILES      "folder=path" per data file: ROOT/path goes to share/quirobot/folder
#
# Run as a script it prints them, one per line, for test/package/test_package_colcon.py:
#   cmake -DROOT=<repository> -P cmake/install_manifest.cmake

# The array KEY of the manifest text JSON as a list, into OUT (in the caller's scope).
function(_quirobot_manifest_array json key out)
  set(values "")
  string(JSON count LENGTH "${json}" ${key})
  math(EXPR last "${count} - 1")
  foreach(i RANGE ${last})
    string(JSON value GET "${json}" ${key} ${i})
    list(APPEND values "${value}")
  endforeach()
  set(${out} "${values}" PARENT_SCOPE)
endfunction()

# The object KEY of the manifest text JSON as a list of "member=value", into OUT.
function(_quirobot_manifest_object json key out)
  set(entries "")
  string(JSON count LENGTH "${json}" ${key})
  math(EXPR last "${count} - 1")
  foreach(i RANGE ${last})
    string(JSON member MEMBER "${json}" ${key} ${i})
    string(JSON value GET "${json}" ${key} "${member}")
    list(APPEND entries "${member}=${value}")
  endforeach()
  set(${out} "${entries}" PARENT_SCOPE)
endfunction()

function(quirobot_install_manifest root)
  set(manifest "${root}/install_manifest.json")
  file(READ "${manifest}" json)
  set(configure_depends "")
  if(NOT CMAKE_SCRIPT_MODE_FILE)  # a build: edits of the manifest or new files re-configure
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${manifest}")
    set(configure_depends CONFIGURE_DEPENDS)
  endif()

  _quirobot_manifest_array("${json}" python_packages packages)
  _quirobot_manifest_object("${json}" executables executables)
  _quirobot_manifest_object("${json}" c_extensions c_extensions)
  _quirobot_manifest_array("${json}" c_flags c_flags)

  set(share_files "")
  string(JSON count LENGTH "${json}" share)
  math(EXPR last "${count} - 1")
  foreach(i RANGE ${last})
    string(JSON folder MEMBER "${json}" share ${i})
    string(JSON patterns LENGTH "${json}" share "${folder}")
    math(EXPR last_pattern "${patterns} - 1")
    foreach(j RANGE ${last_pattern})
      string(JSON pattern GET "${json}" share "${folder}" ${j})
      # As setup.py's glob: files only, sorted.
      file(GLOB matches LIST_DIRECTORIES false ${configure_depends} RELATIVE "${root}" "${root}/${pattern}")
      list(SORT matches)
      if(NOT matches)
        message(FATAL_ERROR "install_manifest.json: share/${folder} pattern ${pattern} matches no file")
      endif()
      foreach(path ${matches})
        list(APPEND share_files "${folder}=${path}")
      endforeach()
    endforeach()
  endforeach()

  set(QUIROBOT_PYTHON_PACKAGES "${packages}" PARENT_SCOPE)
  set(QUIROBOT_EXECUTABLES "${executables}" PARENT_SCOPE)
  set(QUIROBOT_SHARE_FILES "${share_files}" PARENT_SCOPE)
  set(QUIROBOT_C_EXTENSIONS "${c_extensions}" PARENT_SCOPE)
  set(QUIROBOT_C_FLAGS "${c_flags}" PARENT_SCOPE)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  if(NOT DEFINED ROOT)
    message(FATAL_ERROR "usage: cmake -DROOT=<repository> -P ${CMAKE_CURRENT_LIST_FILE}")
  endif()
  quirobot_install_manifest("${ROOT}")
  foreach(kind package executable share extension flag)
    set(values ${QUIROBOT_PYTHON_PACKAGES})
    if(kind STREQUAL "executable")
      set(values ${QUIROBOT_EXECUTABLES})
    elseif(kind STREQUAL "share")
      set(values ${QUIROBOT_SHARE_FILES})
    elseif(kind STREQUAL "extension")
      set(values ${QUIROBOT_C_EXTENSIONS})
    elseif(kind STREQUAL "flag")
      set(values ${QUIROBOT_C_FLAGS})
    endif()
    foreach(value ${values})
      execute_process(COMMAND ${CMAKE_COMMAND} -E echo "${kind} ${value}")
    endforeach()
  endforeach()
endif()
