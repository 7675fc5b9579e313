// REAL is double where the device has shaderFloat64 (score_f64) and float
// otherwise (score_f32). GLSL has no double exp or log, so the f64 variant
// brings its own; both are accurate to about one double ulp, so scores
// rounded once to f32 match the CPU oracle (glibc, double) bit for bit but
// in vanishingly rare rounding-boundary cases.
#ifdef LKV_F64
#extension GL_ARB_gpu_shader_fp64 : require
#define REAL double
// Literals pass through REAL(), exact for the small binary constants used;
// the one inexact constant has its own name.
#define MRI_EPS 1e-5lf

double inf_d() { return packDouble2x32(uvec2(0u, 0x7ff00000u)); }

double exp_r(double x)
{
    if (x > 709.78lf)
        return inf_d();
    if (x < -745.2lf)
        return 0.0lf;
    double k = floor(x * 1.4426950408889634lf + 0.5lf);
    // Cody-Waite: ln 2 split so k * LN2_HI is exact.
    double r = (x - k * 6.93147180369123816490e-01lf) - k * 1.90821492927058770002e-10lf;
    double p = 1.0lf / 6227020800.0lf; // 1/13!
    p = p * r + 1.0lf / 479001600.0lf;
    p = p * r + 1.0lf / 39916800.0lf;
    p = p * r + 1.0lf / 3628800.0lf;
    p = p * r + 1.0lf / 362880.0lf;
    p = p * r + 1.0lf / 40320.0lf;
    p = p * r + 1.0lf / 5040.0lf;
    p = p * r + 1.0lf / 720.0lf;
    p = p * r + 1.0lf / 120.0lf;
    p = p * r + 1.0lf / 24.0lf;
    p = p * r + 1.0lf / 6.0lf;
    p = p * r + 0.5lf;
    p = p * r + 1.0lf;
    p = p * r + 1.0lf;
    int ki = int(k);
    // Two steps keep 2^k representable near the ends of the range.
    return ldexp(ldexp(p, ki / 2), ki - ki / 2);
}

// log of a positive normal double: x = 2^e m, m in [sqrt(1/2), sqrt(2)),
// log m = 2 atanh((m - 1) / (m + 1)) by its series.
double log_r(double x)
{
    int e;
    double m = frexp(x, e);
    if (m < 0.70710678118654752lf) {
        m *= 2.0lf;
        e -= 1;
    }
    double f = (m - 1.0lf) / (m + 1.0lf), f2 = f * f;
    double s = 1.0lf / 23.0lf;
    s = s * f2 + 1.0lf / 21.0lf;
    s = s * f2 + 1.0lf / 19.0lf;
    s = s * f2 + 1.0lf / 17.0lf;
    s = s * f2 + 1.0lf / 15.0lf;
    s = s * f2 + 1.0lf / 13.0lf;
    s = s * f2 + 1.0lf / 11.0lf;
    s = s * f2 + 1.0lf / 9.0lf;
    s = s * f2 + 1.0lf / 7.0lf;
    s = s * f2 + 1.0lf / 5.0lf;
    s = s * f2 + 1.0lf / 3.0lf;
    s = s * f2 + 1.0lf;
    double de = double(e);
    return de * 6.93147180369123816490e-01lf + (de * 1.90821492927058770002e-10lf + 2.0lf * f * s);
}
#else
#define REAL float
#define MRI_EPS 1e-5
float exp_r(float x) { return exp(x); }
float log_r(float x) { return log(x); }
#endif
