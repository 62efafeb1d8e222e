//! `diffuse-array`: NumPy-like distributed arrays whose operations are index tasks on the
//! diffuse IR. Depends only on `diffuse-ir`.
//!
//! Empty until the array-library issue (#3) lands.
