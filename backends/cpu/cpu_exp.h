/* exp(x) for x <= 0 (a logit minus its row's max) in f32 lanes: x = n ln2 + r
 * with |r| <= ln2/2, e^r by a degree-6 polynomial (Cephes' expf
 * coefficients), 2^n through the exponent bits; below -87.3 (where e^x is
 * no longer a normal float) the result is 0. About 2 ulp from the true
 * value, well inside conformance's attend tolerance. Included by the SIMD
 * kernels after they define EXP_FN, VT, EX_MASK_T (what EX_LT yields) and
 * the other EX_* operations. */
static inline VT EXP_FN(VT x)
{
    const VT lo = EX_SET1(-87.3f);
    EX_MASK_T under = EX_LT(x, lo);
    x = EX_MAX(x, lo);
    VT n = EX_ROUND(EX_MUL(x, EX_SET1(1.44269504088896341f)));
    VT r = EX_FMA(n, EX_SET1(-0.693359375f), x);
    r = EX_FMA(n, EX_SET1(2.12194440e-4f), r);
    VT p = EX_SET1(1.9875691500e-4f);
    p = EX_FMA(p, r, EX_SET1(1.3981999507e-3f));
    p = EX_FMA(p, r, EX_SET1(8.3334519073e-3f));
    p = EX_FMA(p, r, EX_SET1(4.1665795894e-2f));
    p = EX_FMA(p, r, EX_SET1(1.6666665459e-1f));
    p = EX_FMA(p, r, EX_SET1(5.0000001201e-1f));
    p = EX_FMA(EX_MUL(p, r), r, EX_ADD(r, EX_SET1(1.0f)));
    return EX_ZERO_WHERE(under, EX_SCALE2(p, n));
}
