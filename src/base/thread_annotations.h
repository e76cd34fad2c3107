// Attributes for clang's thread-safety analysis (-Wthread-safety).
//
// A member marked SKIFF_GUARDED_BY(mu_) may only be touched with mu_ held, and a
// function marked SKIFF_REQUIRES(mu_) only called with it held; clang checks both at
// compile time, so a forgotten lock is a build error instead of a race found
// under load. Other compilers see empty macros. The capability types they
// apply to are in base/mutex.h (libstdc++'s std::mutex carries no attributes).
// The names carry the project's prefix: Abseil's containers bring in its
// compatibility header, which defines GUARDED_BY and others unprefixed.
#ifndef SKIFF_BASE_THREAD_ANNOTATIONS_H_
#define SKIFF_BASE_THREAD_ANNOTATIONS_H_

#if defined(__clang__)
#define SKIFF_THREAD_ANNOTATION_(x) __attribute__((x))
#else
#define SKIFF_THREAD_ANNOTATION_(x)
#endif

// On a class: its objects are capabilities (locks) named `x` in messages.
#define SKIFF_CAPABILITY(x) SKIFF_THREAD_ANNOTATION_(capability(x))
// On a class: an RAII object that holds a capability for its lifetime.
#define SKIFF_SCOPED_CAPABILITY SKIFF_THREAD_ANNOTATION_(scoped_lockable)

// On a member: accessed only with the capability held.
#define SKIFF_GUARDED_BY(x) SKIFF_THREAD_ANNOTATION_(guarded_by(x))
// On a pointer member: what it points to is accessed only with it held (the
// pointer itself is not).
#define SKIFF_PT_GUARDED_BY(x) SKIFF_THREAD_ANNOTATION_(pt_guarded_by(x))

// On a member capability: the order in which capabilities must be taken.
#define SKIFF_ACQUIRED_BEFORE(...) SKIFF_THREAD_ANNOTATION_(acquired_before(__VA_ARGS__))
#define SKIFF_ACQUIRED_AFTER(...) SKIFF_THREAD_ANNOTATION_(acquired_after(__VA_ARGS__))

// On a function: callers hold the capabilities (exclusively or shared).
#define SKIFF_REQUIRES(...) SKIFF_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
#define SKIFF_REQUIRES_SHARED(...) SKIFF_THREAD_ANNOTATION_(requires_shared_capability(__VA_ARGS__))
// On a function: callers must not hold them (it takes them itself).
#define SKIFF_EXCLUDES(...) SKIFF_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))

// On a function: it takes or gives up the capabilities (none named: `this`).
#define SKIFF_ACQUIRE(...) SKIFF_THREAD_ANNOTATION_(acquire_capability(__VA_ARGS__))
#define SKIFF_ACQUIRE_SHARED(...) SKIFF_THREAD_ANNOTATION_(acquire_shared_capability(__VA_ARGS__))
#define SKIFF_RELEASE(...) SKIFF_THREAD_ANNOTATION_(release_capability(__VA_ARGS__))
#define SKIFF_RELEASE_SHARED(...) SKIFF_THREAD_ANNOTATION_(release_shared_capability(__VA_ARGS__))
#define SKIFF_TRY_ACQUIRE(...) SKIFF_THREAD_ANNOTATION_(try_acquire_capability(__VA_ARGS__))
// On a function: it checks at run time that the capability is held, and the
// analysis trusts it from there on.
#define SKIFF_ASSERT_CAPABILITY(x) SKIFF_THREAD_ANNOTATION_(assert_capability(x))
// On a function: it returns a reference to the capability named.
#define SKIFF_RETURN_CAPABILITY(x) SKIFF_THREAD_ANNOTATION_(lock_returned(x))

// On a function whose locking the analysis cannot follow. Every use says why.
#define SKIFF_NO_THREAD_SAFETY_ANALYSIS SKIFF_THREAD_ANNOTATION_(no_thread_safety_analysis)

#endif  // SKIFF_BASE_THREAD_ANNOTATIONS_H_
