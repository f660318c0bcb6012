# bash completion for spotrun (installed as
# $(PREFIX)/share/bash-completion/completions/spotrun).  Each command's
# words are the options it parses (src/cli, cliopt.h); tests/py/
# test_cli_options.py checks that they match.
_spotrun()
{
    local cur prev cmd sub
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD-1]}
    cmd=${COMP_WORDS[1]}
    sub=${COMP_WORDS[2]}
    local cmds="azure-emulator cancel catalog check ckpt cloud cost daemon dashboard ec2-emulator events gce-emulator gpus lambda-emulator launch logs nodes plan sim slurm status trace version"
    local common="--api --state-dir --json --help"

    if [[ $COMP_CWORD -eq 1 ]]; then
        COMPREPLY=($(compgen -W "$cmds --help --version" -- "$cur"))
        return
    fi
    case $prev in
        --gpu)
            COMPREPLY=($(compgen -W "A100 A100-80GB A10G B200 H100 H100-MEGA H200 L4 L40S V100" -- "$cur"))
            return ;;
        --cloud)
            COMPREPLY=($(compgen -W "aws gcp azure lambda coreweave" -- "$cur"))
            return ;;
        --data|--state-dir|--workdir|--work-dir|--dir)
            COMPREPLY=($(compgen -d -- "$cur"))
            return ;;
        --focus)
            COMPREPLY=($(compgen -f -- "$cur") -)
            return ;;
        --trace|--prior-trace|--torch-script|--out|-o|--config)
            COMPREPLY=($(compgen -f -- "$cur"))
            return ;;
        --by)
            COMPREPLY=($(compgen -W "job cloud region pool day" -- "$cur"))
            return ;;
        --policy)
            COMPREPLY=($(compgen -W "od greedy up ups optimal spotrun" -- "$cur"))
            return ;;
        --prices)
            COMPREPLY=($(compgen -W "auto live catalog" -- "$cur"))
            return ;;
        --trace-format)
            COMPREPLY=($(compgen -W "cbl skynomad csv" -- "$cur"))
            return ;;
        --zone-pairs)
            COMPREPLY=($(compgen -W "off on auto" -- "$cur"))
            return ;;
    esac
    case $cmd in
        plan)
            COMPREPLY=($(compgen -W "--all --limit --work-hours --deadline-hours --data --prices --config --json --help" -- "$cur"))
            [[ $cur != -* ]] && COMPREPLY+=($(compgen -f -X '!*.y*ml' -- "$cur") $(compgen -d -- "$cur")) ;;
        launch)
            COMPREPLY=($(compgen -W "-d --detach -y --yes --env --max-restarts --workdir --no-logs --no-store-check $common" -- "$cur"))
            [[ $cur != -* ]] && COMPREPLY+=($(compgen -f -X '!*.y*ml' -- "$cur") $(compgen -d -- "$cur")) ;;
        catalog)
            COMPREPLY=($(compgen -W "--gpu --spot --cloud --region --zone --limit --data --json --help" -- "$cur")) ;;
        check)
            COMPREPLY=($(compgen -W "local aws gcp slurm --json --config --help" -- "$cur")) ;;
        gpus)
            COMPREPLY=($(compgen -W "--cloud --region --data --prices --config --json --help A100 H100 H200 L4 V100" -- "$cur")) ;;
        status|events|cancel|dashboard)
            COMPREPLY=($(compgen -W "$common" -- "$cur")) ;;
        logs)
            COMPREPLY=($(compgen -W "$common -f --follow --rank" -- "$cur")) ;;
        nodes)
            COMPREPLY=($(compgen -W "--all --job $common" -- "$cur")) ;;
        daemon)
            COMPREPLY=($(compgen -W "start stop status --listen --state-dir --json --help" -- "$cur")) ;;
        cost)
            COMPREPLY=($(compgen -W "--by --since --until --job reconcile --focus --focus-version --account --account-name $common" -- "$cur")) ;;
        ckpt)
            if [[ $sub == bench ]]; then
                COMPREPLY=($(compgen -W "--size --dir --json --threads --reps --train-seconds --interval --pairs --placement --copy-cpus --nice --write-cap --torch-script --io-depth --io-chunk --remote --only --no-progress --help" -- "$cur"))
            elif [[ $sub == bench-sync ]]; then
                COMPREPLY=($(compgen -W "--remote --reps --json --help" -- "$cur"))
            elif [[ $COMP_CWORD -eq 2 ]]; then
                COMPREPLY=($(compgen -W "ls verify inspect bench bench-sync --help" -- "$cur"))
            else
                COMPREPLY=($(compgen -W "--json --step --full-meta --help" -- "$cur"))
                [[ $cur != -* ]] && COMPREPLY+=($(compgen -d -- "$cur"))
            fi ;;
        cloud)
            if [[ $COMP_CWORD -eq 2 ]]; then
                COMPREPLY=($(compgen -W "preempt outage --help" -- "$cur"))
            elif [[ $sub == preempt ]]; then
                COMPREPLY=($(compgen -W "--lead $common" -- "$cur"))
            else
                COMPREPLY=($(compgen -W "--for $common" -- "$cur"))
            fi ;;
        slurm)
            if [[ $COMP_CWORD -eq 2 ]]; then
                COMPREPLY=($(compgen -W "resume suspend resume-fail node --help" -- "$cur"))
            elif [[ $sub == node ]]; then
                COMPREPLY=($(compgen -W "--slurmd --bin --help" -- "$cur"))
            else
                COMPREPLY=($(compgen -W "--token-file --accelerators --deadline --cluster --bin --slurmd --slurm-conf --spotrun --api --json --help" -- "$cur"))
            fi ;;
        sim)
            COMPREPLY=($(compgen -W "--trace --policy --trace-format --work-hours --deadline-hours --restart-hours --ckpt-interval-hours --ckpt-gb --egress-per-gb --od-price --spot-price --history-hours --windows --window-hours --seed --start-tick --prior-trace --zone-pairs --json --help" -- "$cur")) ;;
        trace)
            if [[ $COMP_CWORD -eq 2 ]]; then
                COMPREPLY=($(compgen -W "gen prior --help" -- "$cur"))
            elif [[ $sub == prior ]]; then
                COMPREPLY=($(compgen -W "--json --help" -- "$cur"))
                [[ $cur != -* ]] && COMPREPLY+=($(compgen -f -- "$cur"))
            else
                COMPREPLY=($(compgen -W "--out --regions --nodes --up-hours --down-hours --tail --gap-seconds --hours --spot-price --od-ratio --shared-nodes --outage-hours --blip-hours --price-vol --seed --help" -- "$cur"))
            fi ;;
        azure-emulator)
            COMPREPLY=($(compgen -W "--work-dir --data --location --port --time-scale --notice-s --boot-s --page --quota-vms --capacity --help" -- "$cur")) ;;
        ec2-emulator)
            COMPREPLY=($(compgen -W "--work-dir --data --region --port --time-scale --notice-s --boot-s --capacity --capacity-fail --consistency-s --ondemand-quota --spot-quota --throttle --throttle-scale --background-rps --bucket-fill --run-latency-ms --request-log --seed --help" -- "$cur")) ;;
        gce-emulator)
            COMPREPLY=($(compgen -W "--work-dir --data --project --region --port --time-scale --notice-s --capacity --request-log --billing-skus --help" -- "$cur")) ;;
        lambda-emulator)
            COMPREPLY=($(compgen -W "--work-dir --data --port --time-scale --boot-s --quota --capacity --api-key-file --help" -- "$cur")) ;;
        version)
            COMPREPLY=($(compgen -W "--json --help" -- "$cur")) ;;
        *)
            COMPREPLY=($(compgen -W "--help" -- "$cur")) ;;
    esac
}
complete -F _spotrun spotrun
