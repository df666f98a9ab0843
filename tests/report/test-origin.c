/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of origin.c: whose code a Python file or a native module is,
 * decided from paths alone: the user's, CUDA's, the framework's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lw-origin.h"
#include "lw-test.h"

static void check_python(const char *path, enum lw_code_origin expected)
{
	static const char *const names[] = { "user", "stdlib", "package" };
	enum lw_code_origin got = lw_python_file_origin(path, strlen(path));

	if (got != expected) {
		fprintf(stderr, "%s: %s, expected %s\n", path, names[got],
			names[expected]);
		lw_test_failures++;
	}
}

static void check_framework(const char *path, bool expected)
{
	if (lw_module_is_framework(path) != expected) {
		fprintf(stderr, "%s: %sthe framework's, expected the opposite\n",
			path, expected ? "not " : "");
		lw_test_failures++;
	}
}

static void check_cuda(const char *path, bool expected)
{
	if (lw_module_is_cuda(path) != expected) {
		fprintf(stderr, "%s: %sCUDA, expected the opposite\n", path,
			expected ? "not " : "");
		lw_test_failures++;
	}
}

int main(void)
{
	/* The program's own code, wherever it is. */
	check_python("/home/user/train.py", LW_CODE_USER);
	check_python("train.py", LW_CODE_USER);
	check_python("<string>", LW_CODE_USER);
	check_python("<stdin>", LW_CODE_USER);
	check_python("/srv/python3.11/app.py", LW_CODE_USER);
	check_python("/home/user/lib/python/tools.py", LW_CODE_USER);
	check_python("/home/user/site-packages.py", LW_CODE_USER);
	check_python("", LW_CODE_USER);
	/* The standard library: pyenv, Debian, RHEL's lib64, frozen. */
	check_python("/root/.pyenv/versions/3.12.1/lib/python3.12/threading.py",
		     LW_CODE_STDLIB);
	check_python("/usr/lib/python3.11/copy.py", LW_CODE_STDLIB);
	check_python("/usr/lib64/python3.9/json/decoder.py", LW_CODE_STDLIB);
	check_python("/usr/lib/python2.7/os.py", LW_CODE_STDLIB);
	check_python("<frozen importlib._bootstrap>", LW_CODE_STDLIB);
	check_python("<frozen runpy>", LW_CODE_STDLIB);
	check_python("x<frozen runpy>", LW_CODE_USER);
	/* Installed packages, also inside a standard library directory. */
	check_python("/usr/lib/python3/dist-packages/numpy/core/numeric.py",
		     LW_CODE_PACKAGE);
	check_python("/home/user/venv/lib/python3.11/site-packages/torch/nn/modules/module.py",
		     LW_CODE_PACKAGE);
	check_python("/tmp/lw-pysites-x/site-packages/tinytensor.py",
		     LW_CODE_PACKAGE);
	check_python("/usr/local/lib/python3.11/dist-packages/a.py",
		     LW_CODE_PACKAGE);
	/* Not NUL-terminated: only len bytes count. */
	if (lw_python_file_origin("/usr/lib/python3.11/x.py", 9) !=
	    LW_CODE_USER) {
		fprintf(stderr, "read past len\n");
		lw_test_failures++;
	}
	if (lw_python_file_origin(NULL, 0) != LW_CODE_USER) {
		fprintf(stderr, "NULL, 0\n");
		lw_test_failures++;
	}

	check_cuda("/usr/local/cuda/lib64/libcudart.so.12", true);
	check_cuda("libcudart.so.13", true);
	check_cuda("/usr/lib/x86_64-linux-gnu/libcuda.so.1", true);
	check_cuda("/usr/lib/x86_64-linux-gnu/libcuda-wrapper.so", true);
	check_cuda("/usr/lib/x86_64-linux-gnu/libnvidia-ptxjitcompiler.so.1",
		   true);
	check_cuda("/opt/leakwatch/lib/libleakwatch.so", true);
	check_cuda("/opt/torch/lib/libtorch_cuda.so", false);
	check_cuda("/opt/torch/lib/libc10_cuda.so", true);
	check_cuda("/opt/torch/lib/libc10.so", true);
	check_cuda("/usr/lib/libcudnn.so.9", false);
	check_cuda("/usr/lib/libcublas.so.12", false);
	check_cuda("/libcudart/lib/libtinytensor.so", false);
	check_cuda("/usr/bin/python3.11", false);
	check_cuda("", false);

	/* The framework's libraries, whose runs of frames fold: PyTorch's
	 * wheel and CUDA's, by file name. */
	check_framework("/venv/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so",
			true);
	check_framework("/opt/torch/lib/libtorch_cuda.so", true);
	check_framework("/opt/torch/lib/libtorch_python.so", true);
	check_framework("/opt/torch/lib/libtorch.so", true);
	check_framework("/opt/torch/lib/libc10_cuda.so", true);
	check_framework("/opt/torch/lib/libc10.so", true);
	check_framework("/opt/torch/lib/libshm.so", true);
	check_framework("/opt/torch/lib/libcaffe2_nvrtc.so", true);
	check_framework("/venv/lib/python3.11/site-packages/torch/_C.cpython-311-x86_64-linux-gnu.so",
			true);
	check_framework("/usr/local/cuda/lib64/libcudart.so.12", true);
	check_framework("/usr/lib/x86_64-linux-gnu/libcuda.so.1", true);
	check_framework("/venv/lib/python3.11/site-packages/nvidia/cublas/lib/libcublasLt.so.12",
			true);
	check_framework("/usr/lib/libcudnn_ops.so.9", true);
	check_framework("/usr/lib/libnccl.so.2", true);
	check_framework("libnvrtc.so.12", true);
	/* Not the framework: the program's own, other libraries, the
	 * interpreter, leakwatch. */
	check_framework("/home/user/proj/build/libmyops.so", false);
	check_framework("/venv/lib/python3.11/site-packages/torchvision/_C.so",
			false);
	check_framework("/venv/lib/python3.11/site-packages/numpy/core/_multiarray_umath.so",
			false);
	check_framework("/usr/bin/python3.11", false);
	check_framework("/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0", false);
	check_framework("/opt/leakwatch/lib/libleakwatch.so", false);
	check_framework("/usr/lib/x86_64-linux-gnu/libc.so.6", false);
	check_framework("", false);

	return lw_test_done("test-origin");
}
