"""Writes a CMake project of mock-header sources and configures it with a
compile database: what the whole-program tests' project generators share."""
import os
import subprocess


def write_project(root, mocks, name, header_name, header, sources):
    """Writes src/<header_name>, src/<each source>, a CMakeLists.txt that
    compiles them against the mock headers, and configures build/."""
    os.makedirs(os.path.join(root, "src"), exist_ok=True)
    files = dict(sources, **{header_name: header})
    for file_name, text in files.items():
        with open(os.path.join(root, "src", file_name), "w", encoding="utf-8") as handle:
            handle.write(text)
    with open(os.path.join(root, "CMakeLists.txt"), "w", encoding="utf-8") as handle:
        handle.write(f"""cmake_minimum_required(VERSION 3.16)
project({name} CXX)
set(CMAKE_CXX_STANDARD 17)
add_library(app OBJECT {' '.join('src/' + source for source in sorted(sources))})
target_include_directories(app PRIVATE "{mocks}")
""")
    compiler = os.environ.get("CXX_FOR_TESTS", "clang++-19")
    subprocess.run(["cmake", "-S", root, "-B", os.path.join(root, "build"), "-G", "Ninja",
                    f"-DCMAKE_CXX_COMPILER={compiler}", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"],
                   check=True, stdout=subprocess.DEVNULL)
