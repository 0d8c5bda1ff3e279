# float32 exp, sigmoid, tanh and gelu as vectorizable arithmetic, and the loops over them
# compiled once per vector width (AVX-512, AVX2+FMA, baseline), for every plugin's kernels:
# the math, and why it is written in C, are in fastmath.h. A plugin's build puts the directory
# that holds the `headrace` package on its C include path (see plugins/math/setup.py).
cdef extern from "headrace/kernels/fastmath.h" nogil:
    float hr_fexp(float x)
    float hr_fsigmoid(float x)
    float hr_ftanh(float x)
    float hr_fphi(float x)
    float hr_fgelu(float x)
    float hr_fdgelu(float x)
    void hr_f32_exp(const float* x, float* out, Py_ssize_t n)
    void hr_f32_sigmoid(const float* x, float* out, Py_ssize_t n)
    void hr_f32_tanh(const float* x, float* out, Py_ssize_t n)
    void hr_f32_swish(const float* x, float* out, Py_ssize_t n, float beta)
    void hr_f32_gelu(const float* x, float* out, Py_ssize_t n)
    void hr_f32_gelu_tanh(const float* x, float* out, Py_ssize_t n)
    void hr_f32_gelu_grad(const float* x, const float* d, float* out, Py_ssize_t n)
