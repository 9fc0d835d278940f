/* Internal: the one erfc fit the AVX-512 and AVX2 GELU share (ops_*.c).
 * erfc(a) = e^(-a^2) t P(t) for 0 <= a <= 10.5, t = 1/(1 + a/2) in
 * [0.16, 1]: P of degree 10, a least-squares fit in relative error on
 * Chebyshev points, each coefficient rounded to float in turn and the
 * lower ones refitted (1.4e-8 relative). Highest degree first, for Horner. */
#ifndef CT_KERNELS_X86_ERFC_FIT_H
#define CT_KERNELS_X86_ERFC_FIT_H

enum { CT__ERFC_TERMS = 11 };
static const float ct__erfc_fit[CT__ERFC_TERMS] = {
    3.671173006e-02f,  -1.966012865e-01f, 3.957852423e-01f, -3.109045625e-01f,
    -1.878590789e-03f, 2.288365178e-02f,  6.009641290e-02f, 1.841638088e-01f,
    2.454257160e-01f,  2.822283506e-01f,  2.820895314e-01f,
};

#endif
