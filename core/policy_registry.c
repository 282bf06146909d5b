/* The policy registry: every policy's ops table, in a stable order (the order
 * of --list-policies and of "all policies" in specs). Adding a policy means one
 * file in policies/ and one line here. */
#include "tally/policy.h"

extern const tl_policy_ops tl_policy_priority_streams;
extern const tl_policy_ops tl_policy_time_slicing;
extern const tl_policy_ops tl_policy_mps;
extern const tl_policy_ops tl_policy_mps_priority;
extern const tl_policy_ops tl_policy_herald;
extern const tl_policy_ops tl_policy_tally;
extern const tl_policy_ops tl_policy_tgs;
extern const tl_policy_ops tl_policy_pipeswitch;

static const tl_policy_ops *const registry[] = {
    &tl_policy_priority_streams,
    &tl_policy_time_slicing,
    &tl_policy_mps,
    &tl_policy_mps_priority,
    &tl_policy_herald,
    &tl_policy_tally,
    &tl_policy_tgs,
    &tl_policy_pipeswitch,
    NULL,
};

/* Names compare case-insensitively with '_' equal to '-' ("mps_priority"). */
static int same_name(const char *a, const char *b)
{
    for (;; a++, b++) {
        char x = *a == '_' ? '-' : (char)(*a | (*a >= 'A' && *a <= 'Z' ? 0x20 : 0));
        char y = *b == '_' ? '-' : (char)(*b | (*b >= 'A' && *b <= 'Z' ? 0x20 : 0));
        if (x != y)
            return 0;
        if (!x)
            return 1;
    }
}

const tl_policy_ops *tl_policy_find(const char *name)
{
    if (!name)
        return NULL;
    for (int i = 0; registry[i]; i++)
        if (same_name(registry[i]->name, name))
            return registry[i];
    return NULL;
}

const tl_policy_ops *const *tl_policy_all(void)
{
    return registry;
}
