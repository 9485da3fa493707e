/* core/mathconst.h - constants shared by the library's sources (C11 has no M_PI). */
#ifndef FMM_CORE_MATHCONST_H
#define FMM_CORE_MATHCONST_H

#define FMM_PI 3.14159265358979323846

#endif /* FMM_CORE_MATHCONST_H */
