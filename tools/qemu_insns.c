/* A qemu-user TCG plugin that counts the guest instructions a program executes and prints
   "insns: N" to stderr when it exits (tools/neon_insns.sh builds and uses it):

       cc -shared -fPIC -O2 -o libinsns.so tools/qemu_insns.c
       qemu-aarch64 -cpu max -plugin ./libinsns.so PROGRAM ARGS...

   Instruction counts are repeatable where wall time under emulation says little about a real
   core. qemu ships no plugin header in Debian's qemu-user, so the few entry points of its plugin
   interface (version 1: QEMU 5.2 to 7.x) this file uses are declared below. A single-threaded
   guest is counted exactly (one shared counter, added to inline at each translated block). */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#define EXPORT __attribute__((visibility("default")))

struct qemu_plugin_tb;
struct qemu_info; /* not read */
typedef uint64_t plugin_id;
typedef void (*tb_trans_fn)(plugin_id id, struct qemu_plugin_tb *tb);
typedef void (*exit_fn)(plugin_id id, void *data);
enum { INLINE_ADD_U64 = 0 }; /* enum qemu_plugin_op */

void qemu_plugin_register_vcpu_tb_trans_cb(plugin_id id, tb_trans_fn cb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, int op, void *ptr, uint64_t imm);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
void qemu_plugin_register_atexit_cb(plugin_id id, exit_fn cb, void *data);

EXPORT int qemu_plugin_version = 1;

static uint64_t executed;

static void on_translate(plugin_id id, struct qemu_plugin_tb *tb) {
    (void)id;
    qemu_plugin_register_vcpu_tb_exec_inline(tb, INLINE_ADD_U64, &executed, qemu_plugin_tb_n_insns(tb));
}

static void on_exit_report(plugin_id id, void *data) {
    (void)id, (void)data;
    fprintf(stderr, "insns: %" PRIu64 "\n", executed);
}

EXPORT int qemu_plugin_install(plugin_id id, const struct qemu_info *info, int argc, char **argv) {
    (void)info, (void)argc, (void)argv;
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, on_exit_report, NULL);
    return 0;
}
