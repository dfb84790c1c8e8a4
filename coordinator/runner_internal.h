/* SPDX-License-Identifier: Apache-2.0 */
/* The campaign runner's state, shared by the files that make it up: runner.c (stages in order,
 * lifecycle, cancel), runner_round.c (tasks, rounds, verdicts, deadlines), runner_bisect.c (pair
 * judgment, on_fail: bisect) and runner_resume.c (a campaign rebuilt from the store after a
 * coordinator restart). Nothing outside coordinator/runner*.c includes this. */
#ifndef FB_RUNNER_INTERNAL_H
#define FB_RUNNER_INTERNAL_H

#include "runner.h"
#include "common/strmap.h"
#include "scheduler/bisect.h"
#include "scheduler/campaign.h"
#include "scheduler/pairing.h"

/* How long a round waits for the members of early-decided group tasks to report after their
 * cancellation (the agent's kill grace is 3 s), so that the next round does not overlap them. */
#define S_WIND_DOWN_MS 10000

typedef struct {
    fb_verdict_t verdict; /* the member's own result; NONE while it runs */
    bool sent;            /* its RunTask went out */
    bool cancelled;       /* its task was decided while it ran: CancelTask sent */
    bool adopted;         /* resumed: its agent said it runs it, or holds its result */
    double tx, rx;        /* pair stages: judged metrics from its result, NaN when absent */
    fb_kv_t *counters;    /* bisect stages: its port counters that moved, rail -> what */
    size_t n_counters;
} rmember_t;

typedef struct {
    char *id;
    char **nodes;       /* by rank */
    rmember_t *members; /* by rank */
    size_t n_members;
    bool group; /* scope group or pairs: members get a Group */
    unsigned round;
    fb_verdict_t verdict;
    char *rail;   /* bisect: the rail it runs on (sent as device=<rail>), NULL */
    long planned; /* bisect: its index in the session's round, -1 for the stage's own tasks */
} rtask_t;

/* Node-local verdicts of a stage, kept for a later stage's bisect_prior. */
typedef struct {
    char **nodes;
    bool *failed;
    size_t n;
} rlocal_t;

struct runner {
    coord_t *coord;
    fb_campaign_t *campaign;
    char *id;
    coord_progress_cb cb;
    void *arg;
    int64_t *stage_ids;
    size_t stage; /* index of the running stage */
    bool stage_running;
    /* the running stage's plan: one fb_plan_t per round */
    fb_plan_t *plans;
    unsigned n_rounds, round;
    size_t planned_tasks;
    uint64_t seed;   /* pairing random: seed of round 0 (round r uses seed + r) */
    rtask_t **tasks; /* every task of the stage so far, in creation order */
    size_t n_tasks, round_first;
    fb_strmap_t *task_index; /* task id -> rtask_t of the running stage */
    bool winding_down;    /* the round waits (S_WIND_DOWN_MS) for cancelled members only */
    bool stop_waiting;    /* the deadline or the wind-down passed: members still out are left */
    bool next_is_round;   /* what the next timer begins: a round, else a stage */
    uint64_t started_mono;
    uint64_t last_progress; /* monotonic ms of the last rn_progress */
    bool finished, any_failed, cancelled;
    /* actions.slurm ran (or is running: slurm_actions) before the campaign is reported finished */
    bool actions_started;
    coord_slurm_actions_t *slurm_actions;
    bool frozen;           /* runner_freeze: the store lost its latest writes */
    unsigned rounds_ended; /* rounds that ended so far (a deadline checks its round still runs) */
    /* The running round ended (recorded, the next one planned); a result or an agent's event
     * arriving before the next round begins must not end it again: that would record it twice
     * and plan (or skip) a round. */
    bool round_over;
    uint64_t deadline_due; /* monotonic ms the deadline timer is due at */
    fb_verdict_t verdict;
    uv_timer_t deadline;
    uv_timer_t next;
    uv_timer_t tick;  /* progress every second, so that watchers see time pass */
    /* why the latest stage that did not run did not (cannot run, skipped), or NULL; kept until
     * another replaces it, so that a watcher whose progress was held back still gets it */
    char *stage_note;
    int open_handles;
    /* on_fail: bisect */
    fb_bisect_t *bisect;      /* the running stage's diagnosis session */
    bool bisect_plans;        /* pairs: every round comes from the session */
    bool bisect_next;         /* the next round to begin is bround */
    fb_bisect_round_t bround; /* the session's round being placed */
    uint64_t bisect_follow_ms; /* epoch ms the session's first follow-up round began (0: not
                                * yet): its time budget counts from there */
    rlocal_t *locals;         /* per stage, for bisect_prior */
    /* resumed after a coordinator restart (runner_resume.c) */
    bool resuming;           /* waiting for the agents to register again; nothing advances */
    uv_timer_t resume_timer; /* the end of that wait */
    char **resume_wait;      /* the nodes it waits for */
    size_t n_resume_wait;
    size_t n_rounds_stored;        /* rounds of the running stage found in the store */
    uint64_t resume_round_started; /* the running round's stored start, epoch ms (0: unknown) */
};

/* runner.c */
/* A runner with its timers, nothing stored yet (runner_new stores the campaign, runner_resume
 * finds it stored). */
runner_t *rn_alloc(coord_t *coord, fb_campaign_t **campaign, const char *id, coord_progress_cb cb,
                   void *arg);
/* Plans the running stage's rounds over names with seed (a bisect pairs stage: its session
 * plans them). 0, or -errno with err. */
int rn_plan_stage(runner_t *self, char **names, size_t n, uint64_t seed, char *err, size_t errlen);
const fb_stage_t *rn_stage(const runner_t *self);
void rn_progress(runner_t *self);
/* The same after a result: at most one every RN_RESULT_PROGRESS_MS (a progress looks at every
 * running task, so one per result costs a 16384-node stage O(n^2)); the runner's 1 s tick and
 * the stage's end send the rest. */
#define RN_RESULT_PROGRESS_MS 100
void rn_progress_after_result(runner_t *self);
void rn_schedule_next(runner_t *self, bool round);
void rn_end_stage(runner_t *self);

/* After a cancel: ends the campaign once no cancelled member still runs. */
void rn_cancel_settle(runner_t *self);

/* runner_round.c */
/* Whether members of the running round's tasks still run on agents that are alive. */
bool rn_members_running(const runner_t *self);
rtask_t *rn_task_new(runner_t *self, char *id, const fb_group_t *g, bool group, unsigned round);
void rn_clear_tasks(runner_t *self);
void rn_cancel_running(runner_t *self, rtask_t *t, const char *reason);
void rn_decide(runner_t *self, rtask_t *t, fb_verdict_t verdict, const char *why, const char *node);
void rn_round_event(runner_t *self, const fb_plan_t *plan);
void rn_dispatch_round(runner_t *self);
void rn_begin_round(runner_t *self);

void rn_check_round_done(runner_t *self);
void rn_note_metrics(const runner_t *self, rmember_t *m, const fb_result_t *r);
int rn_send_member(runner_t *self, const rtask_t *t, size_t rank);
void rn_member_gone(runner_t *self, rtask_t *t, size_t rank, fb_verdict_t verdict, const char *why);
size_t rn_rank_of(const rtask_t *t, const char *node);
char *rn_member_name(const rtask_t *t, size_t rank);
void rn_on_deadline(uv_timer_t *h);
/* Starts the round's deadline timer, remembering when it is due (stalls are not counted). */
void rn_start_deadline(runner_t *self, uint64_t ms);

/* runner_resume.c */
/* An agent registered while a resumed campaign waits for its agents. */
void rn_resume_hello(runner_t *self, const char *node, char **running, size_t n_running,
                     char **unacked, size_t n_unacked);

/* runner_bisect.c */
void rn_judge_pairs(runner_t *self);
void rn_keep_locals(runner_t *self);
void rn_locals_free(rlocal_t *l);
int rn_bisect_begin(runner_t *self, char **names, size_t n, char *err, size_t errlen);
void rn_note_counters(const runner_t *self, rmember_t *m, const fb_result_t *r);
void rn_bisect_record_round(runner_t *self);
bool rn_bisect_continue(runner_t *self);
fb_verdict_t rn_bisect_finish(runner_t *self, fb_verdict_t *verdicts, size_t n);
void rn_begin_bisect_round(runner_t *self);
/* A resumed stage: its session's follow-up rounds began at this epoch ms (stored). */
void rn_bisect_resumed(runner_t *self, uint64_t follow_started_ms);

#endif
